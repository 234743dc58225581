"""Bounds on the files hermes-fleet reads from the Hermes home: a bot writes its own profile, so
every file there is hostile input, bounded like a manifest (docs/reliability.md#home-files).

Each file has a size bound that fits what Hermes writes there (read by `fsio.read_bounded` with
it). A YAML text is scanned as a stream of parser events, before any parser builds a tree from
it: nesting depth, values (aliases counted as what they expand to) and the digits of a number
are bounded, in time and memory linear in the text (libyaml's event parser keeps its own stack:
no recursion, no tree). A JSON text is parsed with bounded integers, and its depth checked
without recursion. Every refusal is a HermesStateError naming the file (line and column for
YAML), so the bot that holds it is one object in error and the others go on.
"""

from __future__ import annotations

import json
import re
from typing import Any

from controller.errors import HermesStateError

# What Hermes 0.19.0 writes, and the bound (docs/reliability.md#home-files has the reasons).
CONFIG_BYTES = 1024 * 1024  # config.yaml: Hermes' full default is 15 KB (1,438 values, 6 deep)
PROFILE_META_BYTES = 1024 * 1024  # profile.yaml: a description, a display name, ui_meta records
ENV_BYTES = 1024 * 1024  # .env: KEY=value lines
JOBS_BYTES = 8 * 1024 * 1024  # cron/jobs.json: a few KB per job (prompt, last error)
SOUL_BYTES = 4 * 1024 * 1024  # SOUL.md: a manifest's soul is at most 1,000,000 bytes
AVATAR_BYTES = 16 * 1024 * 1024  # assets/avatar.*: a manifest's image is at most 2,000,000 bytes

MAX_DEPTH = 64  # nested maps and lists (the manifests' bound; Hermes' config is 6 deep)
MAX_VALUES = 100_000  # values in one YAML document, aliases counted expanded
MAX_NUMBER_DIGITS = 100  # in a row: a longer number is refused (Python refuses int() past 4,300 digits)

# A plain scalar PyYAML or ruamel would turn into a base-10 int or a float (the costly kinds;
# hex, octal and binary convert in linear time).
_NUMBER = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _refused(source: str, problem: str, line: int = 0, column: int = 0) -> HermesStateError:
    where = f"{source}:{line}:{column}" if line else source
    return HermesStateError(
        f"{where}: {problem}",
        path=source,
        hint="hermes-fleet reads the files of the Hermes home within fixed bounds (docs/reliability.md#home-files): "
        "fix or remove the file; the other bots are not affected",
    )


# --- YAML --------------------------------------------------------------------------------------


def check_yaml(text: str, source: str) -> None:
    """Raise a HermesStateError when `text` nests deeper than MAX_DEPTH, holds more than
    MAX_VALUES values (aliases expanded) or a number of more than MAX_NUMBER_DIGITS digits.

    A text the event parser cannot read passes: the loader that follows reports its syntax error.
    A text that cannot break a bound (see `_may_break_a_bound`) is not scanned.
    """
    if not _may_break_a_bound(text):
        return
    parser = _event_parser(text)
    try:
        _scan(parser, source)
    except HermesStateError:
        raise
    except Exception:  # a syntax error: the loader words it, with its position
        return
    finally:
        dispose = getattr(parser, "dispose", None)
        if dispose is not None:
            dispose()


# What a text must hold to break a bound; each is looked for at C speed, so the common config (no
# alias, little nesting, short numbers) costs microseconds instead of an event scan (4 us a value).
_SMALL = 64 * 1024  # under this, a text without aliases holds fewer than MAX_VALUES values
_ALIAS = re.compile(r"[&*][^\s,\[\]{}]")  # an anchor or alias (also `*/5` in a quoted cron field: then scanned)
_DEEP_LINE = re.compile(r"^[ \t\-?:]{32}", re.MULTILINE)  # block nesting needs indentation or `- - ` per level
_LONG_DIGITS = re.compile("[0-9_]{" + str(MAX_NUMBER_DIGITS + 1) + "}")


def _may_break_a_bound(text: str) -> bool:
    """False when `text` certainly keeps every bound: under _SMALL, no anchor or alias, no line
    starting with 32 indentation or indicator characters and at most 32 opening flow brackets
    that are not empty (so at most 64 levels), and no run of more than MAX_NUMBER_DIGITS digits."""
    return (
        len(text) > _SMALL
        or text.count("[") + text.count("{") - text.count("[]") - text.count("{}") > 32
        or _ALIAS.search(text) is not None
        or _DEEP_LINE.search(text) is not None
        or _LONG_DIGITS.search(text) is not None
    )


def _event_parser(text: str) -> Any:
    try:
        from ruamel.yaml.cyaml import CParser

        return CParser(text)
    except ImportError:  # no ruamel.yaml.clib: the pure-Python parser (also an iterative state machine)
        return _PureEvents(text)


class _PureEvents:
    def __init__(self, text: str) -> None:
        from ruamel.yaml import YAML

        self._events = YAML(typ="safe", pure=True).parse(text)

    def get_event(self) -> Any:
        return next(self._events)


def _scan(parser: Any, source: str) -> None:
    # Per open collection: [anchor, values counted when it opened, deepest level below it].
    stack: list[list[Any]] = []
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth) of the node it names
    values = 0
    get_event = parser.get_event
    while True:
        event = get_event()
        kind = event.__class__.__name__
        if kind == "ScalarEvent":
            values += 1
            if len(event.value) > MAX_NUMBER_DIGITS:
                _check_number(event, source)
            if event.anchor:
                sizes[event.anchor] = (1, 0)
        elif kind in ("MappingStartEvent", "SequenceStartEvent"):
            values += 1
            stack.append([event.anchor, values, 0])
            if len(stack) > MAX_DEPTH:
                raise _refused(source, f"nesting is deeper than {MAX_DEPTH} levels", *_position(event))
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            anchor, opened, below = stack.pop()
            if anchor:
                sizes[anchor] = (values - opened + 1, below + 1)
            if stack:
                stack[-1][2] = max(stack[-1][2], below + 1)
        elif kind == "AliasEvent":
            count, depth = sizes.get(event.anchor, (1, 0))
            values += count
            if len(stack) + depth > MAX_DEPTH:
                raise _refused(
                    source, f"nesting is deeper than {MAX_DEPTH} levels (through the alias *{event.anchor})", *_position(event)
                )
            if stack:
                stack[-1][2] = max(stack[-1][2], depth)
        elif kind == "StreamEndEvent":
            return
        if values > MAX_VALUES:
            raise _refused(
                source,
                f"more than {MAX_VALUES:,} values" + (" (YAML aliases counted expanded: an alias bomb?)" if sizes else ""),
                *_position(event),
            )


def _check_number(event: Any, source: str) -> None:
    value = event.value
    if len(value) <= MAX_NUMBER_DIGITS:
        return
    plain = not event.style  # '' from the C parser, None from the pure one
    if (plain or event.tag in _NUMBER_TAGS) and _NUMBER.fullmatch(value) and _LONG_DIGITS.search(value):
        digits = sum(c.isdigit() for c in value)
        raise _refused(
            source, f"a number of {digits:,} digits (at most {MAX_NUMBER_DIGITS} in a row are read)", *_position(event)
        )


def _position(event: Any) -> tuple[int, int]:
    mark = getattr(event, "start_mark", None)
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


# --- JSON --------------------------------------------------------------------------------------


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {digits:,} digits (at most {MAX_NUMBER_DIGITS} are read)")
    return int(text)


def parse_json(text: str, source: str, what: str, hint: str, *, strict: bool = True, walk: bool = True) -> Any:
    """The JSON document in `text`, with numbers and depth bounded; a HermesStateError naming
    `what` and `source` (and saying `hint`) when it does not parse or breaks a bound.

    `walk=False` leaves out the depth walk (hermes-fleet's own large state files, whose readers
    check their shape): nesting past what the parser's recursion takes is still refused."""
    try:
        data = json.loads(text, parse_int=_bounded_int, strict=strict)
    except RecursionError:
        raise HermesStateError(
            f"cannot read {what} {source}: nested deeper than {MAX_DEPTH} levels", path=source, hint=hint
        ) from None
    except json.JSONDecodeError as exc:
        raise HermesStateError(f"cannot read {what} {source}: not valid JSON ({exc})", path=source, hint=hint) from exc
    except ValueError as exc:  # a bound (_bounded_int) says what it refused
        raise HermesStateError(f"cannot read {what} {source}: {exc}", path=source, hint=hint) from exc
    if walk and too_deep(data):
        raise HermesStateError(f"cannot read {what} {source}: nested deeper than {MAX_DEPTH} levels", path=source, hint=hint)
    return data


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when lists and maps nest deeper than `limit` in `value` (walked without recursion,
    stopping at the first one too deep)."""
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        todo.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
