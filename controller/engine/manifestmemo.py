"""A watch loop's validated manifests, kept from pass to pass while nothing they came from changed.

A pass of `watch` loads and validates the manifests before it plans (10,000 bots: about a tenth of
a no-op pass). The result is kept with what it was made of: the source's revision (for `-f`, a
digest of every manifest file's content; for `--git`, the commit), the paths, `--fleet`, and the
stat keys of the files the manifests refer to (`soul_file`, an avatar `image`, a room `picture`),
which the revision does not cover. The next pass takes it as it is when all of these are the same;
anything else is loaded in full. A referenced file changed in the tick of the load (the racy rule of
adapters/obscache.py) is not kept. Only a result without errors is kept: a stalled source is
loaded again each pass, as before. Validation's warnings that depend on the clock (a one-shot in
the past) are not read by the loop; its errors and the desired state depend on the files alone.
Secret references are not resolved here: each pass resolves them as it observes (engine/observing.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.adapters import obscache
from controller.adapters.sources import Snapshot
from controller.engine.history import FILE_KEYS
from controller.manifests import reading, validating

Held = tuple[tuple[object, ...], list[str], tuple[obscache.Key, ...], validating.ValidationResult]


class ManifestMemo:
    def __init__(self) -> None:
        self._held: Held | None = None

    def load(self, snap: Snapshot, *, fleet: str | None, skip: Path) -> validating.ValidationResult:
        """reading.load_paths of `snap`, or the result of an earlier pass made of the same files."""
        what = (snap.revision, tuple(snap.paths), snap.recursive, fleet, str(skip))
        held = self._held
        if held is not None and held[0] == what and obscache.stat_keys(held[1]) == held[2]:
            return held[3]
        self._held = None
        started = time.time_ns()
        result = reading.load_paths(snap.paths, recursive=snap.recursive, fleet=fleet, skip=skip)
        if result.errors or result.state is None:
            return result
        paths = sorted(set(referenced(result)))
        keys = obscache.stat_keys(paths)
        # Unchanged since before the load began (ctime cannot be set back): the load read what `keys` describe.
        if keys is not None and not obscache.racy(keys, started):
            self._held = (what, paths, keys, result)
        return result


def referenced(result: validating.ValidationResult) -> Iterator[str]:
    """The files the manifests name (history.FILE_KEYS), relative to their documents' folders."""
    for doc in result.loaded:
        yield from _files_in(doc.data, doc.base_dir)


def _files_in(value: Any, base: Path) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _files_in(item, base)
    elif isinstance(value, dict):
        for key, child in value.items():
            if key in FILE_KEYS and isinstance(child, str):
                yield str(base / child)
            else:
                yield from _files_in(child, base)
