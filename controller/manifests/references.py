"""Resolving what the manifests reference on the machine that applies: secrets (`from_env`,
`from_file`, `from_command`) and avatar images.

The only place secret values are read. Values go straight into `.env` files; everything that
is shown (plan, status, logs, JSON) sees only "changed" or a keyed hash (core.inventory.Inventory.secret_hash).
A `from_command` runs an argv list (no shell) in the manifest's folder, bounded in time and
output; its output never appears in an error message (only the command and its exit status do).

`from_file` (docs/manifest.md#secrets): a relative path is read from the manifest's folder and may
not leave it, not even through a symlink (validation refuses a `..` that leaves it); an absolute
path is read where it is (`/run/secrets/...`, `/etc/hermes-fleet/...`: kept out of git). Either way
the file must be a regular file of at most MAX_SECRET_BYTES, checked before a byte is read, so a
FIFO or a device never hangs or floods a run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from controller import bounded
from controller.errors import RefusedValue, SecretUnavailable, TooLarge
from controller.manifests.desired import EnvEntry
from controller.manifests.models import SecretRef
from controller.manifests.validating import MAX_IMAGE_BYTES

MAX_SECRET_BYTES = 64 * 1024
DEFAULT_COMMAND_TIMEOUT = 10.0

# One run's memo of command outputs: a command shared by many bots (a `defaults.env` entry) runs once.
_command_memo = threading.local()


@contextlib.contextmanager
def command_cache() -> Iterator[None]:
    """Within this block, each distinct (argv, folder) runs once; outside it, every resolve runs anew."""
    outer = getattr(_command_memo, "values", None)
    _command_memo.values = {} if outer is None else outer
    try:
        yield
    finally:
        _command_memo.values = outer


def resolve(entry: EnvEntry) -> str:
    if entry.ref is None:
        return entry.literal or ""
    if entry.ref.from_command is not None:
        return _from_command_cached(entry.ref, entry.base_dir)
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
    except TooLarge:
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


def _from_command_cached(ref: SecretRef, base_dir: str) -> str:
    memo = getattr(_command_memo, "values", None)
    key = (tuple(ref.from_command or ()), str(Path(base_dir).resolve()), ref.timeout)
    if memo is not None and key in memo:
        return str(memo[key])
    value = run_command(list(ref.from_command or ()), cwd=base_dir, timeout=ref.timeout or DEFAULT_COMMAND_TIMEOUT)
    if memo is not None:
        memo[key] = value
    return value


def run_command(argv: list[str], *, cwd: str, timeout: float = DEFAULT_COMMAND_TIMEOUT) -> str:
    """The stdout of `argv` (no shell), checked: exit 0 within `timeout`, at most MAX_SECRET_BYTES, UTF-8.

    stderr is discarded unread, and stdout never reaches a message: a tool that echoes the secret
    in its error output must not leak it into a plan, a log or a notification. The command runs
    in its own session, so a timeout kills it and everything it started.
    """
    shown = " ".join(argv)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise SecretUnavailable(f"secret command {argv[0]!r} was not found on this machine (from_command: {shown})") from None
    except OSError as exc:
        raise SecretUnavailable(f"cannot run secret command {shown}: {exc.strerror}") from None
    chunks: list[bytes] = []
    size = 0
    too_large = False

    def read() -> None:
        nonlocal size, too_large
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 65536):
            size += len(chunk)
            if size > MAX_SECRET_BYTES:
                too_large = True
                _kill(proc)
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, name="hermes-fleet-secret-command", daemon=True)
    reader.start()
    try:
        reader.join(timeout)
    except BaseException:  # SIGTERM or SIGINT meanwhile: the command and what it started go too
        _kill(proc)
        raise
    timed_out = reader.is_alive()
    if timed_out:
        _kill(proc)
        reader.join(5)
    try:
        code = proc.wait(5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
        code = None
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
    if timed_out:
        raise SecretUnavailable(f"secret command {shown} did not finish within {timeout:g}s (it was killed)")
    if too_large:
        raise SecretUnavailable(f"secret command {shown} printed more than {MAX_SECRET_BYTES} bytes")
    if code != 0:
        raise SecretUnavailable(
            f"secret command {shown} failed (exit status {code}); run it by hand to see its error "
            "(hermes-fleet never shows a secret command's output)"
        )
    try:
        value = b"".join(chunks).decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SecretUnavailable(f"secret command {shown} printed something that is not UTF-8 text") from None
    if not value:
        raise SecretUnavailable(f"secret command {shown} printed nothing")
    return value


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
