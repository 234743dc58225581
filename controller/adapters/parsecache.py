"""The parse cache: the parsed values of the YAML files the last apply left, by their text's digest.

`<home>/.hermes-fleet/cache/parsed.json` (0600), written at the end of every apply with the
documents each bot's config.yaml and profile.yaml held when the apply was done (read or written by
it), and read before a plan observes the home. A file's text is always read; only its parse is
skipped when the digest of that text is in the cache, so an edit of any kind (the same size, in
the same second, the inode kept) is seen: its text has another digest. A missing, unreadable or
foreign cache is no error: every file is parsed, as without one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.adapters import configfile, fsio, sharing
from controller.adapters.home import HomeLayout, check_state_path
from controller.errors import ControllerError

VERSION = 1
_LOADED: set[str] = set()  # homes whose cache this process has taken (a watch loop reads it once)


def cache_path(root: Path) -> Path:
    return HomeLayout(root).state.parse_cache


def load(root: Path) -> None:
    """Take the cache of `root` into the parser's memo (once per process)."""
    key = str(root)
    if key in _LOADED:
        return
    _LOADED.add(key)
    path = cache_path(root)
    try:
        check_state_path(root, path)
        data = fsio.read_json(path, "the parse cache", "")
    except ControllerError:
        return  # a symlink, a folder, unreadable, not JSON: parse everything (plan reports real problems elsewhere)
    if isinstance(data, dict) and data.get("version") == VERSION and isinstance(data.get("documents"), dict):
        # Shared: the documents' equal lists (22 `platform_toolsets` lists per config.yaml) once;
        # the memo's values are never changed in place.
        configfile.remember(sharing.MEMO_POOL.share(data["documents"]))


def start_run() -> None:
    """An apply begins: what each file holds is recorded afresh."""
    configfile.forget_sources()


def save(root: Path) -> None:
    """Write the documents the files of `root` hold after this apply (atomic, 0600)."""
    documents = configfile.current_documents(str(root))
    path = cache_path(root)
    check_state_path(root, path.parent)
    fsio.make_dirs(path.parent, mode=0o700)
    fsio.atomic_write_bytes(path, render_chunks({"version": VERSION, "documents": documents}), mode=0o600)


def render(data: dict[str, Any]) -> bytes:
    """`json.dumps(data, sort_keys=True, separators=(",", ":")) + "\\n"`, encoded."""
    return b"".join(render_chunks(data))


def render_chunks(data: dict[str, Any]) -> Iterator[bytes]:
    """`render` document by document: `save` writes each piece as it is made, so the text of
    20,000 documents never exists whole in memory."""

    def compact(value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")

    yield b"{"
    for n, key in enumerate(sorted(data)):
        yield (b"," if n else b"") + compact(key) + b":"
        if key != "documents":
            yield compact(data[key])
            continue
        yield b"{"
        for i, digest in enumerate(sorted(data[key])):
            yield (b"," if i else b"") + compact(digest) + b":" + compact(data[key][digest])
        yield b"}"
    yield b"}\n"
