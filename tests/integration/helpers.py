"""Shared builders for the converge tests: manifests on disk, CLI runs, tree snapshots, tiny images.

Everything works on real files in temporary folders; the CLI is called in-process through
`controller.cli.main` with stdout/stderr captured, exactly what a user's terminal would see.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from controller import cli


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self) -> Any:
        return json.loads(self.out)


def hermes_fleet(*args: str | Path) -> Run:
    """Run `hermes-fleet <args>` in-process; returns the exit code and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return Run(code, out.getvalue(), err.getvalue())


def apply(manifest: Path, home: Path, *flags: str) -> Run:
    return hermes_fleet("apply", "-f", manifest, "--home", home, *flags)


def plan(manifest: Path, home: Path, *flags: str) -> Run:
    return hermes_fleet("plan", "-f", manifest, "--home", home, *flags)


def plan_json(manifest: Path, home: Path, *flags: str) -> dict[str, Any]:
    run = plan(manifest, home, "-o", "json", *flags)
    assert run.code in (0, 1, 3), run.text
    return run.json()


def changes(manifest: Path, home: Path, *flags: str) -> dict[str, dict[str, Any]]:
    """Objects of a JSON plan that would write something, keyed 'kind/name'."""
    data = plan_json(manifest, home, *flags)
    return {f"{o['kind']}/{o['name']}": o for o in data["objects"] if o["action"] not in ("no-op",)}


def fields(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field"]: f for f in obj["fields"]}


def assert_converged(manifest: Path, home: Path) -> None:
    run = plan(manifest, home, "--detailed-exitcode")
    assert run.code == 0, run.text
    assert "No changes" in run.out, run.out


def write_fleet(folder: Path, bots: list[dict[str, Any]], *, fleet: str = "acme", name: str = "fleet.yaml", **spec: Any) -> Path:
    """One `Fleet` document (written as JSON, which is YAML) with these bots and extra spec keys."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": fleet},
        "spec": {"bots": bots, **spec},
    }
    path = folder / name
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def read_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def profile(home: Path, name: str) -> Path:
    return home if name == "default" else home / "profiles" / name


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `root` (and root itself): type, mode bits and content hash / link target."""
    out: dict[str, tuple[Any, ...]] = {}
    if not os.path.lexists(root):
        return out
    paths = [root, *sorted(root.rglob("*"))]
    for path in paths:
        rel = "." if path == root else str(path.relative_to(root))
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(path.read_bytes()).hexdigest())
        except FileNotFoundError:
            # Gone between the listing and the look: a temp file a live writer (a running
            # reconciler's status file) renamed meanwhile. Not part of the home's state.
            continue
    return out


def all_text_under(root: Path) -> str:
    """The decoded bytes of every file under root (for secret scans)."""
    chunks = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            chunks.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


def tiny_png(rgb: tuple[int, int, int] = (200, 30, 60)) -> bytes:
    """A valid 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" + bytes(rgb))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def bot_chat_rows(profile_dir: Path) -> list[tuple[str, str]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{profile_dir / 'state.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, title FROM sessions WHERE title LIKE 'Bot Chat%'").fetchall()
    finally:
        conn.close()


def session_count(profile_dir: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{profile_dir / 'state.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    finally:
        conn.close()
