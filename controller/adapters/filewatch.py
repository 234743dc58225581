"""Manifest changes on this machine, seen with watchfiles (debounced; docs/watch.md#sources).

`relevant` decides which changed paths can alter the manifests: not the home's own writes, not an
editor's temp file, only the suffixes a manifest folder holds. `watch` blocks, calling `on_change`
with the changed file names once per debounced batch, until `stop` is set. `batches` watches the
home's profiles for the observation cache (engine/observecache.py). The one module that imports
watchfiles.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from controller.adapters.sources import LocalSource, is_editor_temp

WATCH_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".png", ".jpg", ".jpeg", ".webp", ".key", ".txt")


def relevant(path: str, root: Path, source: LocalSource) -> bool:
    """A change that can alter the manifests: not the home's own writes, not an editor's temp file."""
    if not path.endswith(WATCH_SUFFIXES) or is_editor_temp(path):
        return False
    resolved = Path(path).resolve()
    if resolved.is_relative_to(root.resolve()):
        return False  # the home may sit beside the manifests; its writes are ours
    for raw in source.paths:
        base = Path(raw).resolve()
        if base.is_dir() and (resolved.parent == base or (source.recursive and resolved.is_relative_to(base))):
            return True
        if not base.is_dir() and resolved.parent == base.parent:
            return True  # a manifest file, or a soul/avatar file beside it
    return False


def watch(
    root: Path, source: LocalSource, *, stop: threading.Event, debounce_ms: int, on_change: Callable[[list[str]], None]
) -> None:
    import watchfiles

    def keep(_change: Any, path: str) -> bool:
        return relevant(path, root, source)

    for changes in watchfiles.watch(
        *[str(r) for r in source.watch_roots()],
        watch_filter=keep,
        stop_event=stop,
        debounce=debounce_ms,
        step=50,
        raise_interrupt=False,
        rust_timeout=500,
        yield_on_timeout=False,
    ):
        on_change(sorted({os.path.basename(p) for _, p in changes}))


def start(
    root: Path, source: LocalSource, *, stop: threading.Event, debounce_ms: int, on_change: Callable[[list[str]], None]
) -> threading.Thread:
    """`watch` in a daemon thread."""
    thread = threading.Thread(
        target=watch,
        args=(root, source),
        kwargs={"stop": stop, "debounce_ms": debounce_ms, "on_change": on_change},
        name="hermes-fleet-watch",
        daemon=True,
    )
    thread.start()
    return thread


def batches(folder: Path, *, stop: threading.Event) -> Iterator[list[str]]:
    """The paths changed under `folder`, one list per short batch, and an empty list every
    200 ms of quiet (so the caller knows the watch is up), until `stop` is set."""
    import watchfiles

    for changes in watchfiles.watch(
        folder, stop_event=stop, debounce=50, step=20, raise_interrupt=False, rust_timeout=200, yield_on_timeout=True
    ):
        yield [p for _, p in changes]
