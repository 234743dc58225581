"""Run `hermes-fleet <argv>` with a fault hook in fsio.WRITE_HOOKS (used as a subprocess by the tests).

Environment:
  HF_HOOK      none | count | exit | term | raise | enospc
  HF_HOOK_AT   the 1-based write point where `exit` / `raise` / `enospc` fires
  HF_HOOK_LOG  a file that gets one line per write point reached: "<n>\t<target path>\t<sha256 of the
               staged bytes about to be published, or 'dir'>"

`exit` calls os._exit(137) at write point k, before the rename: the process dies as if killed.
`term` sends the process SIGTERM there (what `systemctl stop` or `kill` sends).
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controller import cli
from controller.adapters import fsio

MODE = os.environ.get("HF_HOOK", "none")
AT = int(os.environ.get("HF_HOOK_AT", "0") or 0)
LOG = os.environ.get("HF_HOOK_LOG", "")
_count = 0


def _staged_digest(target: Path) -> str:
    """The bytes fsio is about to publish: its one temp file `.<name>.*.tmp` beside the target."""
    if target.is_dir() or not target.parent.is_dir():
        return "dir"
    staged = sorted(target.parent.glob(f".{target.name}.*.tmp"), key=lambda p: p.stat().st_mtime_ns)
    if not staged:
        return "dir"  # publish_dir: a directory rename
    return hashlib.sha256(staged[-1].read_bytes()).hexdigest()


def hook(target: Path) -> None:
    global _count
    _count += 1
    if LOG:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(f"{_count}\t{target}\t{_staged_digest(Path(target))}\n")
            handle.flush()
            os.fsync(handle.fileno())
    if _count != AT:
        return
    if MODE == "exit":
        os._exit(137)
    if MODE == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    if MODE == "raise":
        raise RuntimeError(f"injected crash at write point {_count} ({target})")
    if MODE == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))


def run_many(commands: list[list[str]]) -> list[dict[str, object]]:
    """Several CLI runs in this one process (saves interpreter start-ups), each output captured."""
    import contextlib
    import io

    results = []
    for argv in commands:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
        results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
    return results


if __name__ == "__main__":
    if MODE != "none":
        fsio.WRITE_HOOKS.append(hook)
    if sys.argv[1:2] == ["--many"]:  # argv[2] is a JSON list of argv lists; prints a JSON list of results
        import json

        print(json.dumps(run_many(json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(cli.main(sys.argv[1:]))
