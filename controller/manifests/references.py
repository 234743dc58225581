"""Resolving what the manifests reference on the machine that applies: secrets and avatar images.

The only place secret values are read. Values go straight into `.env` files; everything that
is shown (plan, status, logs, JSON) sees only "changed" or a keyed hash (core.inventory.Inventory.secret_hash).

`from_file` (docs/manifest.md#secrets): a relative path is read from the manifest's folder and may
not leave it, not even through a symlink (validation refuses a `..` that leaves it); an absolute
path is read where it is (`/run/secrets/...`, `/etc/hermes-fleet/...`: kept out of git). Either way
the file must be a regular file of at most MAX_SECRET_BYTES, checked before a byte is read, so a
FIFO or a device never hangs or floods a run.
"""

from __future__ import annotations

import os
from pathlib import Path

from controller import bounded
from controller.errors import RefusedValue, SecretUnavailable
from controller.manifests.desired import EnvEntry
from controller.manifests.validating import MAX_IMAGE_BYTES

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
    path = secret_path(entry.ref.from_file or "", entry.base_dir)
    try:
        data = bounded.read_bytes(path, MAX_SECRET_BYTES)
    except bounded.TooLarge:
        raise SecretUnavailable(f"secret file {path} is larger than {MAX_SECRET_BYTES:,} bytes") from None
    except OSError as exc:
        raise SecretUnavailable(f"cannot read secret file {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SecretUnavailable(f"secret file {path} is not UTF-8 text") from None


def secret_path(raw: str, base_dir: str) -> Path:
    """Where a `from_file` secret is read; SecretUnavailable when a relative one leaves its folder."""
    path = Path(raw)
    if path.is_absolute():
        return path
    base = Path(base_dir)
    resolved = Path(os.path.realpath(base / path))
    if not resolved.is_relative_to(Path(os.path.realpath(base))):
        raise SecretUnavailable(
            f"secret file {raw!r} leads out of the manifest's folder {base} (to {resolved}); a relative "
            "from_file stays in that folder: use an absolute path for a file kept elsewhere"
        )
    return base / path


def read_image(path: str) -> bytes:
    """An avatar image a manifest names (validated already); RefusedValue if it changed since."""
    try:
        return bounded.read_bytes(path, MAX_IMAGE_BYTES)
    except OSError as exc:
        raise RefusedValue(f"cannot read the avatar image {path}: {exc.strerror}; validate the manifests again") from None
