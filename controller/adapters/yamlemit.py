"""A plain block-style YAML emitter for documents made from nothing (a new bot's config.yaml and
profile.yaml), byte-identical to what the round-trip emitter in `configfile` writes for them.

ruamel's emitter costs about 2 ms for a 15-key config (serializer, resolver and tag objects per
node); at 10,000 new bots that is a third of the apply. A document made from nothing has no
comments, styles or quotes to keep, so most of them need none of that machinery. This writes the
common case itself and declines (returns None) anything where YAML's quoting or layout rules have
edge cases, and the caller then uses ruamel exactly as before:

  * a string that is not ASCII, is empty, longer than 1,000 characters, starts with anything but
    a letter, digit, `_` or `/`, ends in a space, holds a character outside a small safe set
    (no `:`, `#`, quotes at the start, brackets, braces, backslashes, control characters), or
    reads as another type under PyYAML's implicit rules (`yes`, `0755`, `1e+3`, `~`, dates...);
  * a key that is not such a string, or is 128 characters or longer (ruamel then writes `? key`);
  * a float, None, an empty map or list, a list directly inside a list, any other type.

`tests/adapters/test_yamlemit.py` checks the output against ruamel's own dump of the same
document (byte for byte) and PyYAML's `safe_load` of it (Hermes' reader) over generated trees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controller.adapters import sharing

# Letters, digits and a few marks that never start a YAML indicator in the middle of a plain
# scalar in block context; the first character is stricter (no `-`, `.`, `?`, quotes...).
_SAFE = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9 _./,;()+=@~$%^*?'\"<>&!|-]*\Z")
_MAX_SCALAR = 1000
_MAX_KEY = 128  # ruamel's simple-key limit: a longer key is written as `? key`
_INDENT = 2  # mappings; sequences sit 2 in under their key with `- ` (indent(2, 4, 2))


class _Decline(Exception):
    """The document needs the round-trip emitter."""


def emit(data: Mapping[str, Any], resolves: Callable[[str], bool]) -> tuple[str, dict[str, Any]] | None:
    """The document as ruamel (configfile._make_yaml) would write it, with its values as plain
    dicts and lists (what reading the text back gives), or None when it declines.

    `resolves(text)` says whether a plain scalar `text` would be read as something other than a
    string (PyYAML's implicit resolver); such strings need quotes and are declined.
    """
    out: list[str] = []
    try:
        plain = _mapping(data, 0, out, resolves)
    except _Decline:
        return None
    return "".join(out), plain


# Strings found plain, per resolver: a fleet repeats the same keys and values (toolset and
# platform names) in every bot's config; a dict lookup instead of the checks. Bounded.
_PLAIN: dict[Callable[[str], bool], set[str]] = {}
_PLAIN_MAX = 50_000


def _plain(text: str, resolves: Callable[[str], bool]) -> str:
    known = _PLAIN.get(resolves)
    if known is not None and text in known:
        return text
    _check_plain(text, resolves)
    if known is None or len(known) >= _PLAIN_MAX:
        known = _PLAIN[resolves] = set()
    known.add(text)
    return text


def _check_plain(text: str, resolves: Callable[[str], bool]) -> None:
    if (
        not text
        or len(text) > _MAX_SCALAR
        or not text.isascii()
        or text[-1] == " "
        or _SAFE.match(text) is None
        or " #" in text
        or resolves(text)
    ):
        raise _Decline


def _scalar(value: Any, resolves: Callable[[str], bool]) -> str:
    kind = type(value)
    if kind is str:
        return _plain(value, resolves)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    raise _Decline


def _key(key: Any, resolves: Callable[[str], bool]) -> str:
    if type(key) is not str or len(key) >= _MAX_KEY:
        raise _Decline
    return _plain(key, resolves)


def _mapping(
    data: Mapping[str, Any], indent: int, out: list[str], resolves: Callable[[str], bool], first: str = ""
) -> dict[str, Any]:
    """Each `key: value` line at `indent`; `first` replaces the first line's indent (a `- ` item)."""
    if not isinstance(data, Mapping) or not data:
        raise _Decline
    pad = " " * indent
    lead = first or pad
    plain: dict[str, Any] = {}
    for key, value in data.items():
        head = f"{lead}{_key(key, resolves)}:"
        lead = pad
        if isinstance(value, Mapping):
            out.append(head + "\n")
            plain[key] = _mapping(value, indent + _INDENT, out, resolves)
        elif isinstance(value, list | tuple):
            out.append(head + "\n")
            plain[key] = _sequence(value, indent + _INDENT, out, resolves)
        else:
            out.append(f"{head} {_scalar(value, resolves)}\n")
            plain[key] = value
    return plain


def _sequence(items: list[Any] | tuple[Any, ...], indent: int, out: list[str], resolves: Callable[[str], bool]) -> list[Any]:
    if not items:
        raise _Decline
    dash = " " * indent + "- "
    plain: list[Any] = []
    scalars = True
    for item in items:
        if isinstance(item, Mapping):
            plain.append(_mapping(item, indent + 2, out, resolves, first=dash))
            scalars = False
        elif isinstance(item, list | tuple):
            raise _Decline
        else:
            out.append(f"{dash}{_scalar(item, resolves)}\n")
            plain.append(item)
    # One list per equal list of scalars (every bot's config repeats its toolsets for each
    # platform): the parse memo keeps these values and never changes them in place.
    return sharing.MEMO_POOL.shared_list(plain) if scalars else plain
