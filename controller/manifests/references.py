"""Resolving secret references (`from_env`, `from_file`) on the machine that applies.

The only place secret values are read. Values go straight into `.env` files; everything that
is shown (plan, status, logs, JSON) sees only "changed" or a keyed hash (core.inventory.Inventory.secret_hash).
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.errors import SecretUnavailable
from controller.manifests.desired import EnvEntry

MAX_SECRET_BYTES = 64 * 1024


def resolve(entry: EnvEntry) -> str:
    if entry.ref is None:
        return entry.literal or ""
    if entry.ref.from_env is not None:
        value = os.environ.get(entry.ref.from_env)
        if value is None:
            raise SecretUnavailable(
                f"environment variable {entry.ref.from_env} is not set on this machine; export it before "
                "running hermes-fleet (or use from_file)"
            )
        return value
    path = Path(entry.ref.from_file or "")
    if not path.is_absolute():
        path = Path(entry.base_dir) / path
    try:
        data = path.read_bytes()[: MAX_SECRET_BYTES + 1]
    except OSError as exc:
        raise SecretUnavailable(f"cannot read secret file {path}: {exc.strerror}") from None
    if len(data) > MAX_SECRET_BYTES:
        raise SecretUnavailable(f"secret file {path} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        return data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SecretUnavailable(f"secret file {path} is not UTF-8 text") from None
