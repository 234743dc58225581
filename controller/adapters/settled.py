"""The settled plan: the last apply's no-op plan, kept with every input it was made from.

`<home>/.hermes-fleet/cache/settled-plan.json` (0600) holds what `plan` printed for a home that
matched its manifests (text in each view and colour, JSON, stderr), made by `apply` right after it
converged, with the inputs of that plan (adapters/inputtrace.py): the stat key of every file and
folder it read or looked at, a digest of the racy ones, its command-line inputs, a digest of the
process's environment (variables, working folder, user, host name, Python) and a key of
hermes-fleet's own code. `plan` prints the kept output, without validating or observing, only
while every one of those is unchanged; anything else plans in full, as before.

It is never written by `plan` (which writes nothing) and never read for a write. A plan that read
something no stat key vouches for (a `from_command` secret, the gateway, a process's liveness) is
not kept. The file is hostile input like every file of the home: read bounded, checked field by
field, and ignored when anything is off.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import __version__, bounded
from controller.adapters import fsio, inputtrace
from controller.adapters.home import HomeLayout, check_state_path

KIND = "hermes-fleet-settled-plan"
VERSION = 1
MAX_BYTES = 256 * 1024 * 1024  # about 3 MB a 1,000 bots: room for 50,000 and more
MAX_RECORDS = inputtrace.MAX_PATHS
MAX_DIGESTED_BYTES = 256 * 1024 * 1024  # what a check may read again (racy files), in all
KINDS = frozenset({inputtrace.FILE, inputtrace.FOLDER, inputtrace.STAT, inputtrace.LSTAT, inputtrace.LINK})
# Set anew for each command or session (by the shell, sshd, a terminal, systemd, pytest for each
# phase of a test) and read by no plan: left out of the environment's digest.
SHELL_ONLY = frozenset(
    {
        "_", "OLDPWD", "PWD", "SHLVL", "PYTEST_CURRENT_TEST", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY",
        "XDG_SESSION_ID", "TERM_SESSION_ID", "WINDOWID", "INVOCATION_ID",
    }
)  # fmt: skip
_PACKAGE = Path(__file__).resolve().parent.parent  # controller/


@dataclass(frozen=True)
class Settled:
    params: dict[str, Any]
    process: str
    code: str
    salt: str
    records: list[tuple[str, str, inputtrace.Key | None, str]]
    outputs: dict[str, str]  # "json", "text:<view>:<0|1 colour>", "stderr"

    def holds(self, params: dict[str, Any]) -> bool:
        """True when `params`, the process, the code and every recorded input are what they were."""
        return (
            params == self.params
            and process_key(self.salt) == self.process
            and code_key() == self.code
            and inputtrace.unchanged(self.records, self.salt.encode())
        )


def path_of(root: Path) -> Path:
    return HomeLayout(root).state.settled_plan


def process_key(salt: str) -> str:
    """A salted digest of what the process brings to a plan besides files: every environment
    variable (secrets among them: only this digest is kept), the working folder, the user, the host
    name (the default --host) and the Python."""
    h = hashlib.sha256(salt.encode())
    for name in sorted(set(os.environ) - SHELL_ONLY):
        h.update(f"{name}\0{os.environ[name]}\0".encode("utf-8", "surrogateescape"))
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
    h.update(f"{cwd}\0{ids}\0{socket.gethostname()}\0{sys.version}\0{sys.executable}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def code_key() -> str:
    """hermes-fleet's version and the stat keys of its files (modules and data) and of the import
    path's folders (an edited module or an upgraded dependency is a new key)."""
    h = hashlib.sha256(f"{__version__}\0{VERSION}".encode())
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:  # removed by an upgrade running now: a key no memo has
                h.update(f"{folder}/{name}\0gone\n".encode())
                continue
            h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
        except OSError:
            continue
        h.update(f"{entry}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    return h.hexdigest()


def new_salt() -> str:
    return secrets.token_hex(16)


def save(root: Path, settled: Settled) -> None:
    """Write it (atomic, 0600). A failed write is a HermesStateError (fsio), the apply's error as
    the observation cache's is (verbs/plan.py `settle`)."""
    path = path_of(root)
    check_state_path(root, path.parent)
    fsio.make_dirs(path.parent, mode=0o700)
    data = {
        "kind": KIND,
        "version": VERSION,
        "hermes_fleet": __version__,
        "params": settled.params,
        "process": settled.process,
        "code": settled.code,
        "salt": settled.salt,
        "records": [[k, p, list(key) if key else None, d] for k, p, key, d in settled.records],
        "outputs": settled.outputs,
    }
    fsio.atomic_write_bytes(path, json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode("ascii"), mode=0o600)


def load(root: Path) -> Settled | None:
    """The memo of `root`, or None when there is none or any part of it is not as `save` writes it."""
    path = path_of(root)
    try:
        check_state_path(root, path)
        data = json.loads(bounded.read_bytes(path, MAX_BYTES))
    except Exception:  # absent, a link, a FIFO, too big, not JSON: plan in full
        return None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("version") != VERSION:
        return None
    if data.get("hermes_fleet") != __version__:
        return None
    fields = (data.get("params"), data.get("process"), data.get("code"), data.get("salt"), data.get("outputs"))
    params, process, code, salt, outputs = fields
    if not (isinstance(params, dict) and all(isinstance(x, str) for x in (process, code, salt))):
        return None
    if not isinstance(outputs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()):
        return None
    records = _records(data.get("records"))
    if records is None:
        return None
    return Settled(params, str(process), str(code), str(salt), records, outputs)


def _records(raw: Any) -> list[tuple[str, str, inputtrace.Key | None, str]] | None:
    """The records as `save` writes them, or None: a field of the wrong type or form, a path that
    is not absolute or holds a NUL, more records or more bytes to digest again than a check may
    take (a memo is hostile input: it must not make `plan` slow or crash)."""
    if not isinstance(raw, list) or len(raw) > MAX_RECORDS:
        return None
    out: list[tuple[str, str, inputtrace.Key | None, str]] = []
    digested = 0
    for item in raw:
        if not (isinstance(item, list) and len(item) == 4):
            return None
        kind, path, key, digest = item
        if kind not in KINDS or not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            return None
        if not isinstance(digest, str) or len(digest) > 64:
            return None
        if key is None:
            out.append((kind, path, None, digest))
            continue
        if not (isinstance(key, list) and len(key) == 8 and all(type(n) is int and n >= 0 for n in key)):
            return None
        if digest:
            digested += key[2]
            if digested > MAX_DIGESTED_BYTES:
                return None
        out.append((kind, path, (key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7]), digest))
    return out
