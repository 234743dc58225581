"""Decoded documents held with fewer objects: equal short strings and equal lists of scalars once.

A home of 10,000 bots decodes the same keys and lists in every profile's files (each config.yaml's
22 `platform_toolsets` lists, each cron job's 33 keys, each inventory record's field names). The
JSON decoder shares keys only within one document, so every file brings its own copies. `Sharer`
rebuilds a decoded value with one string per text (interned, up to `MAX_INTERNED` characters) and
one list per equal list of scalars. Only for values that are never changed in place (the callers
replace a value, they never mutate it): a shared list changed through one document would change
them all.
"""

from __future__ import annotations

import sys
from typing import Any

MAX_INTERNED = 256
MAX_LISTS = 50_000  # distinct lists a pool keeps; past it the pool starts over (a long watch)
_SCALARS = (str, int, float, bool, type(None))


class Sharer:
    """One pool of shared lists (for the documents of one read, or of one run)."""

    def __init__(self) -> None:
        self._lists: dict[tuple[tuple[type, Any], ...], list[Any]] = {}

    def share(self, value: Any) -> Any:
        if isinstance(value, str):
            return sys.intern(value) if len(value) <= MAX_INTERNED else value
        if isinstance(value, dict):
            return {(sys.intern(k) if type(k) is str and len(k) <= MAX_INTERNED else k): self.share(v) for k, v in value.items()}
        if isinstance(value, list):
            items = [self.share(v) for v in value]
            return self.shared_list(items) if all(type(v) in _SCALARS for v in items) else items
        return value

    def shared_list(self, items: list[Any]) -> list[Any]:
        """The pool's one list equal to `items`, a list of scalars (`items` itself the first time)."""
        if len(self._lists) >= MAX_LISTS:
            self._lists.clear()
        # (type, value) keys: 1, 1.0 and True are equal but not the same list.
        return self._lists.setdefault(tuple((type(v), v) for v in items), items)


# The parse memo's pool (adapters/configfile.py): the values of every config.yaml and profile.yaml
# parsed, written or taken from the parse cache in this process, handed to readers without a copy.
MEMO_POOL = Sharer()
