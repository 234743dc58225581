"""Round-trip editing of a Hermes `config.yaml` (comments, key order and quotes kept).

The reconciler loads a profile's config with `ConfigDoc.load`, reads and sets the dotted keys a
fleet manages, and saves atomically; keys it does not manage (`_config_version`, unknown ones)
are never touched. Hermes' defaults for a missing key are `controller.hermes.defaults.default_for`.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import math
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, MarkedYAMLError, YAMLError
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarfloat import ScalarFloat
from ruamel.yaml.scalarint import OctalInt
from ruamel.yaml.tokens import CommentToken

from controller import redact
from controller.adapters import fsio, homebounds, sharing, yamlemit
from controller.errors import HermesStateError, RefusedValue


def unparseable_hint(source: str) -> str:
    return f"fix or remove it; hermes-fleet never overwrites a {Path(source).name} it cannot parse"


# Hermes writes config.yaml with PyYAML's block style: 2-space maps, list items indented under
# their key ("  - item"). Files with another style keep their own (guessed at load).
_HERMES_INDENT = (2, 4, 2)  # mapping, sequence, offset


# PyYAML 6's implicit scalar rules (yaml/resolver.py), which differ from ruamel's "1.1" table:
# `y`/`n` are strings, a float needs a dot and a signed exponent (`1e3` is a string).
_PYYAML_IMPLICIT: list[tuple[str, str, str]] = [
    ("bool", r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$", "yYnNtTfFoO"),
    (
        "float",
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                 |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                 |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                 |[-+]?\.(?:inf|Inf|INF)
                 |\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    (
        "int",
        r"""^(?:[-+]?0b[0-1_]+
               |[-+]?0[0-7_]+
               |[-+]?(?:0|[1-9][0-9_]*)
               |[-+]?0x[0-9a-fA-F_]+
               |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""",
        "-+0123456789",
    ),
    ("merge", r"^(?:<<)$", "<"),
    ("null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    (
        "timestamp",
        r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                     |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
                      (?:[Tt]|[ \t]+)[0-9][0-9]?
                      :[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
                      (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
        "0123456789",
    ),
    ("value", r"^(?:=)$", "="),
]


def _pyyaml_table() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}
    for name, pattern, first in _PYYAML_IMPLICIT:
        compiled = re.compile(pattern, re.X)
        firsts: list[Any] = list(first) + ([""] if name == "null" else [])
        for char in firsts:
            table.setdefault(char, []).append((f"tag:yaml.org,2002:{name}", compiled))
    # VersionedResolver.resolve() does `resolvers += table.get(None, [])` on the list it looked
    # up: with no None entry that adds nothing, so the table can be shared, never copied.
    assert None not in table
    return table


class _PyYamlResolver(VersionedResolver):
    """Resolve plain scalars exactly as PyYAML does, without writing a `%YAML` directive.

    Hermes reads config.yaml with PyYAML (YAML 1.1 rules): `off`/`yes`/`on` are booleans and
    `0755` is octal. ruamel defaults to 1.2, where they are strings; `get` would then disagree
    with Hermes, and a string "on" we write would be dumped unquoted and read back by Hermes as
    True. Using PyYAML's own table for both load and dump keeps both sides in agreement.
    """

    _table = _pyyaml_table()

    @property
    def processing_version(self) -> Any:
        return (1, 1)

    @property
    def versioned_resolver(self) -> Any:
        # Called three times per plain scalar: hand out the shared table (see _pyyaml_table).
        return self._table


class _Representer(RoundTripRepresenter):
    pass


def _represent_octal_11(representer: RoundTripRepresenter, data: OctalInt) -> Any:
    # ruamel writes `0o755` (1.2 syntax, tagged under a 1.1 resolver); 1.1 spells it `0755`.
    width = getattr(data, "_width", None)
    digits = f"{data:0{width}o}" if width else format(data, "o")
    return representer.represent_scalar("tag:yaml.org,2002:int", "0" + digits)


_Representer.add_representer(OctalInt, _represent_octal_11)

_PYYAML_FLOAT = re.compile(_PYYAML_IMPLICIT[1][1], re.X)


def _resolves_other(text: str) -> bool:
    """True when PyYAML (Hermes' reader) would read the plain scalar `text` as something other
    than a string (a bool, number, null, date, merge key...): it needs quotes."""
    return any(pattern.match(text) for _, pattern in _PyYamlResolver._table.get(text[:1], ()))


def _represent_float_exact(representer: RoundTripRepresenter, data: float) -> Any:
    """A float that reads back as the very same float, under PyYAML's rules (Hermes' reader).

    ruamel rebuilds a loaded float from its remembered width and precision, which can change its
    value (`4.531285637299909e+160` came back as `...908e+160`: a key nobody touched changed, and
    the plan never converged); and it writes `1e+16`, which PyYAML reads as a string, as
    `!!float '1e+16'`. Its own text is kept when it is exact; else Python's shortest exact repr,
    with a dot added to the mantissa (`1.0e+16`) as YAML 1.1 needs.
    """
    if isinstance(data, ScalarFloat):
        node = RoundTripRepresenter.represent_scalar_float(representer, data)
    else:
        node = RoundTripRepresenter.represent_float(representer, data)
    text = str(node.value)
    try:
        exact = _PYYAML_FLOAT.match(text) is not None and float(text.replace("_", "")) == float(data)
    except ValueError:
        exact = False
    if exact or not math.isfinite(data):
        return node
    digits = repr(float(data))
    mantissa, e, exponent = digits.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if e and exponent[0] not in "+-":
        exponent = "+" + exponent
    return representer.represent_scalar("tag:yaml.org,2002:float", mantissa + (f"e{exponent}" if e else ""))


_Representer.add_representer(float, _represent_float_exact)
_Representer.add_representer(ScalarFloat, _represent_float_exact)


def _make_yaml(indent: tuple[int, int, int] = _HERMES_INDENT) -> YAML:
    yaml = YAML(typ="rt")
    yaml.Resolver = _PyYamlResolver
    yaml.Representer = _Representer
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long string (a prompt, a URL) onto several lines
    mapping, sequence, offset = indent
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _guess_indent(text: str) -> tuple[int, int, int]:
    """The indentation of an existing file, so re-rendering does not re-indent untouched blocks."""
    mapping = sequence = offset = None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        indent = len(line) - len(body)
        if body.startswith("- ") or body == "-":
            if sequence is None and index:
                parent = _previous_content_line(lines, index)
                if parent is not None and parent.rstrip().endswith(":"):
                    parent_indent = len(parent) - len(parent.lstrip(" "))
                    offset = indent - parent_indent
                    sequence = offset + 2
        elif mapping is None and indent and index:
            parent = _previous_content_line(lines, index)
            if parent is not None and parent.rstrip().endswith(":") and not parent.lstrip().startswith("-"):
                mapping = indent - (len(parent) - len(parent.lstrip(" ")))
    mapping = mapping if mapping and mapping > 0 else _HERMES_INDENT[0]
    if sequence is None or offset is None or offset < 0:
        sequence, offset = _HERMES_INDENT[1], _HERMES_INDENT[2]
    return mapping, max(sequence, offset + 2), offset


def _previous_content_line(lines: list[str], index: int) -> str | None:
    for line in reversed(lines[:index]):
        if line.strip() and not line.lstrip().startswith("#"):
            return line
    return None


def split_dotted(dotted: str) -> list[str]:
    parts = dotted.split(".")
    if not dotted or any(part == "" for part in parts):
        raise RefusedValue(f"invalid config key {dotted!r}: empty path segment")
    return parts


def to_plain(value: Any) -> Any:
    """ruamel's round-trip types (CommentedMap, ScalarFloat, ...) as plain Python values."""
    if isinstance(value, dict):
        return {to_plain(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    # ruamel's ScalarBoolean subclasses int, so test the class name before int().
    if type(value).__name__ == "ScalarBoolean":
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, datetime.datetime):
        return datetime.datetime.fromisoformat(value.isoformat())
    if isinstance(value, datetime.date):
        return datetime.date.fromisoformat(value.isoformat())
    return value


def _same(current: Any, wanted: Any) -> bool:
    return _strict_equal(to_plain(current), wanted)


def _strict_equal(a: Any, b: Any) -> bool:
    # Plain `==` says True == 1 and 1 == 1.0; a manifest's `true` must not match a live `1`.
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _to_node(value: Any) -> Any:
    if isinstance(value, dict):
        node = CommentedMap()
        for key, child in value.items():
            node[key] = _to_node(child)
        return node
    if isinstance(value, list | tuple):
        return CommentedSeq(_to_node(v) for v in value)
    return value


# --- a fast read path ---------------------------------------------------------------------------
# Most documents are only read (a plan reads two per bot and writes none). ruamel's round-trip
# parser is pure Python (~1 ms for a 13-line profile.yaml); its C parser, with the same resolver,
# is ~8x faster but keeps no comments or styles. So a document is first read through the C parser
# into plain values, and the round-trip tree is built only when a key is set or deleted. The fast
# result is used only where it cannot differ from `to_plain(round-trip load)`. Everything else
# goes to the round-trip parser, which then decides, and words any error, exactly as before:
# a text the C path fails on; a value that is not a plain scalar, map or list (timestamps); and
# any text with a tag (`!`: the C composer reads `!!str 5` as 5), an anchor, a merge key, a
# directive, a block scalar (`|`, `>`), or a character other than \n that YAML may treat as a
# line break, tab or BOM, or refuses. The two parsers disagree on edge cases of each of those
# (found by differential fuzzing: docs/performance.md).
_FAST_PATH_SKIP = re.compile("[!&%|>\t\r\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]|<<")
_PLAIN_SCALARS = (str, int, float, bool, type(None))


_LOCAL = threading.local()  # one C loader per thread (watch mode runs threads)


def _new_c_loader() -> YAML | None:
    try:
        from ruamel.yaml.cyaml import CParser
    except ImportError:  # no ruamel.yaml.clib (PyPy): round-trip only
        return None
    yaml = YAML(typ="safe")
    yaml.Resolver = _PyYamlResolver
    return yaml if yaml.Parser is CParser else None


def _c_loader() -> YAML | None:
    if not hasattr(_LOCAL, "loader"):
        _LOCAL.loader = _new_c_loader()
    loader: YAML | None = _LOCAL.loader
    return loader


def _is_plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, _PLAIN_SCALARS) and _is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain(v) for v in value)
    return isinstance(value, _PLAIN_SCALARS)


# --- parsed documents by content ------------------------------------------------------------------
# `_fast_plain` results keyed by a digest of the text: the same text always parses to the same
# values, so a hit can never be stale, whatever happened to the file (no path, size or time is
# trusted). `adapters/parsecache.py` keeps the entries of an apply's files for the next run. The
# values are pooled (sharing.MEMO_POOL) and never mutated: readers copy (`to_plain`) or take them
# as they are (`shared_plain`, read-only), writers load the round-trip tree.
_MEMO: dict[str, dict[str, Any]] = {}
_MEMO_MAX = 100_000  # entries; past it the memo starts over (a watch loop over a changing home)
_LAST: dict[str, str] = {}  # source path -> digest of the text last parsed or written there


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _fast_plain(text: str, source: str | None = None) -> dict[str, Any] | None:
    """The document as plain values via the C parser (or the memo), None when only round-trip may decide."""
    key = text_digest(text)
    plain = _MEMO.get(key)
    if plain is None:
        # A text not seen before is checked within the home's bounds before any parser builds a
        # tree of it (an alias bomb, deep nesting, a huge number: docs/reliability.md#home-files).
        homebounds.check_yaml(text, source or "<yaml>")
        plain = _parse_plain(text)
        if plain is None:
            return None
        plain = sharing.MEMO_POOL.share(plain)
        _memorize(key, plain)
    if source is not None:
        _LAST[source] = key
    return plain


def _remember_emitted(text: str, plain: dict[str, Any]) -> None:
    """The values of a text yamlemit wrote, so reading it back needs no parser: the emitter is
    exact (PyYAML reads its output back as these very values: tests/adapters/test_yamlemit.py)."""
    _memorize(text_digest(text), plain)


def _memorize(key: str, plain: dict[str, Any]) -> None:
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO.setdefault(key, plain)


def remember(entries: Mapping[str, Any]) -> None:
    """Take parsed documents (digest -> plain values) a previous run stored."""
    for key, plain in entries.items():
        if isinstance(key, str) and type(plain) is dict and len(_MEMO) < _MEMO_MAX:
            _MEMO.setdefault(key, plain)


def forget_sources() -> None:
    """Start a run: which text each file holds is recorded afresh."""
    _LAST.clear()


def current_documents(under: str) -> dict[str, dict[str, Any]]:
    """digest -> plain values of the text each file below `under` holds after this run's reads
    and writes, for the documents JSON keeps exactly (string keys, finite numbers) and that show
    no sign of a credential (`_may_hold_secret`: hermes-fleet keeps no secret in its state)."""
    prefix = under.rstrip("/") + "/"
    out = {}
    for source, key in _LAST.items():
        plain = _MEMO.get(key)
        if source.startswith(prefix) and plain is not None and _json_exact(plain) and not _may_hold_secret(plain):
            out[key] = plain
    return out


# A key that names a credential, anywhere in a document (Hermes keeps API keys in .env, but a user
# may put one into config.yaml: `api_key`, an MCP server's `env`/`headers`, a bot token...).
_SECRET_KEY = re.compile(r"key|token|secret|passw|credential|auth|cookie|bearer|private|env|header", re.IGNORECASE)
_URL_CREDENTIAL = re.compile(r"://[^/\s]*@|[?&][^=&\s]+=")


def may_hold_secret(value: Any) -> bool:
    """True when `value` (plain data) shows a sign of a credential: a key that names one, a URL
    with a user or query part, or a token-shaped word (`redact.mask_text` would mask it: a key
    pasted into a description). Such values are kept in no state file (parse and observation caches)."""
    return _may_hold_secret(value)


def _may_hold_secret(value: Any, key: str = "") -> bool:
    if _SECRET_KEY.search(key):
        return True
    if isinstance(value, dict):
        return any(_may_hold_secret(v, str(k)) for k, v in value.items())
    if isinstance(value, list):
        return any(_may_hold_secret(v) for v in value)
    if not isinstance(value, str):
        return False
    return _URL_CREDENTIAL.search(value) is not None or redact.mask_text(value) != value


def _json_exact(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, _PLAIN_SCALARS)


def _parse_plain(text: str) -> dict[str, Any] | None:
    loader = _c_loader()
    if loader is None or _FAST_PATH_SKIP.search(text):
        return None
    try:
        data = loader.load(text)
    except Exception:  # any doubt: the round-trip parser decides, and words the error
        return None
    if data is None:
        return {}
    return data if type(data) is dict and _is_plain(data) else None


def _round_trip_load(text: str, source: str) -> CommentedMap:
    try:
        data = _make_yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = exc.problem or exc.context or "invalid YAML"
        # ruamel quotes both values of a duplicate key; they may be secrets, so cut them off.
        problem = problem.split(" with value ", 1)[0]
        raise HermesStateError(f"{where}: {problem}", path=source, hint=unparseable_hint(source)) from exc
    except YAMLError as exc:
        raise HermesStateError(f"{source}: {exc}", path=source, hint=unparseable_hint(source)) from exc
    if data is None:
        data = CommentedMap()
    if not isinstance(data, CommentedMap):
        raise HermesStateError(
            f"{source}: the top level is a {type(data).__name__}, not a mapping",
            path=source,
            hint=unparseable_hint(source),
        )
    return data


class ConfigDoc:
    """One config.yaml, loaded round-trip. `get`/`set`/`delete` take dotted keys (`a.b.c`).

    Reads use plain values from the fast path when it applies; the round-trip tree (`_data`) is
    built on first need, i.e. when a key is set or deleted (see `_fast_plain`).
    """

    def __init__(
        self, data: CommentedMap | None, *, text: str, exists: bool, source: str, plain: dict[str, Any] | None = None
    ) -> None:
        self._tree = data
        self._plain = plain if data is None else None
        self._text = text
        self._changed = False
        self._dumper: YAML | None = None
        self.exists = exists
        self.source = source

    @property
    def _data(self) -> CommentedMap:
        if self._tree is None:
            # An empty text has nothing to keep: no parser (ruamel's costs about 1 ms to set up).
            self._tree = _round_trip_load(self._text, self.source) if self._text else CommentedMap()
            self._plain = None
        return self._tree

    @property
    def _read_view(self) -> dict[str, Any]:
        return self._plain if self._plain is not None else self._data

    @property
    def _yaml(self) -> YAML:
        if self._dumper is None:
            self._dumper = _make_yaml(_guess_indent(self._text) if self._text else _HERMES_INDENT)
        return self._dumper

    @classmethod
    def load(cls, path: Path | str) -> ConfigDoc:
        path = Path(path)
        data = fsio.read_bounded(path, homebounds.CONFIG_BYTES)  # a FIFO or a huge file: a clear HermesStateError
        if data is None:
            return cls(CommentedMap(), text="", exists=False, source=str(path))
        try:
            # Bytes, decoded without newline translation: save() compares the file to exactly this.
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HermesStateError(f"cannot read {path}: {exc}", path=str(path), hint=unparseable_hint(str(path))) from exc
        return cls.parse(text, source=str(path), exists=True)

    @classmethod
    def parse(cls, text: str, *, source: str = "<config.yaml>", exists: bool = True) -> ConfigDoc:
        plain = _fast_plain(text, source)
        if plain is not None:
            return cls(None, text=text, exists=exists, source=source, plain=plain)
        return cls(_round_trip_load(text, source), text=text, exists=exists, source=source)

    @property
    def changed(self) -> bool:
        return self._changed

    def as_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = to_plain(self._read_view)
        return plain

    def shared_plain(self) -> dict[str, Any] | None:
        """The document's values without a copy when they came from the parse memo (shared with
        every equal document, so never to be changed in place), else None (use `as_dict`)."""
        return self._plain if self._tree is None else None

    def get(self, dotted: str) -> tuple[bool, Any]:
        """(present?, plain value) of a dotted key; a non-map on the way counts as absent."""
        return self.get_in(split_dotted(dotted))

    def get_in(self, parts: Sequence[str]) -> tuple[bool, Any]:
        node: Any = self._read_view
        for part in parts:
            if not isinstance(node, dict) or part not in node:
                return False, None
            node = node[part]
        return True, to_plain(node)

    def set(self, dotted: str, value: Any) -> bool:
        """Set a key, creating parent maps; returns False (and touches nothing) when already equal."""
        return self.set_in(split_dotted(dotted), value)

    def set_in(self, parts: Sequence[str], value: Any) -> bool:
        parent = self._data
        changed = False
        for part in parts[:-1]:
            child = parent.get(part)
            if not isinstance(child, CommentedMap):
                # A scalar where we need a map (e.g. `model: gpt-4` and we set `model.provider`):
                # Hermes accepts both shapes, so the scalar is replaced by a map. Callers that
                # care about the old scalar's meaning (model.default) set that key too.
                child = CommentedMap()
                parent[part] = child
                changed = True
            parent = child
        changed = self._assign(parent, parts[-1], value) or changed
        self._changed = self._changed or changed
        return changed

    def _assign(self, parent: CommentedMap, key: str, value: Any) -> bool:
        if key in parent and _same(parent[key], value):
            return False
        current = parent.get(key)
        if isinstance(value, dict) and isinstance(current, CommentedMap):
            # Merge key by key so the comments and order of unchanged children survive.
            changed = False
            for stale in [k for k in current if k not in value]:
                _delete_key(current, stale)
                changed = True
            for child_key, child_value in value.items():
                changed = self._assign(current, child_key, child_value) or changed
            return changed
        parent[key] = _to_node(value)
        return True

    def delete(self, dotted: str) -> bool:
        """Remove a key; parents left empty by the removal go too. False when it was absent."""
        return self.delete_in(split_dotted(dotted))

    def delete_in(self, parts: Sequence[str]) -> bool:
        chain: list[CommentedMap] = [self._data]
        for part in parts[:-1]:
            child = chain[-1].get(part)
            if not isinstance(child, CommentedMap):
                return False
            chain.append(child)
        if parts[-1] not in chain[-1]:
            return False
        # Remove at the highest level that would otherwise be left empty.
        depth = len(parts) - 1
        while depth > 0 and len(chain[depth]) == 1:
            depth -= 1
        _delete_key(chain[depth], parts[depth])
        self._changed = True
        return True

    def render(self) -> str:
        if not self._changed:
            return self._text
        if not self._data:
            return ""
        if not self._text:  # made from nothing: no comments or styles to keep (yamlemit.py)
            emitted = yamlemit.emit(self._data, _resolves_other)
            if emitted is not None:
                _remember_emitted(*emitted)
                return emitted[0]
        buffer = io.StringIO()
        self._yaml.dump(self._data, buffer)
        return buffer.getvalue()

    def save(self, path: Path | str) -> None:
        """Atomic write; fsio.ChangedUnderUs if the file changed since it was loaded (Hermes'
        `config set` takes no lock): the caller loads again and retries."""
        expect = self._text.encode("utf-8") if self.exists else None
        text = self.render()  # one dump (the round-trip emitter is most of a new bot's write time)
        fsio.atomic_write_text(Path(path), text, mode=0o600, expect=expect)
        self._text = text
        _fast_plain(text, str(path))  # the file's new text, for the parse cache (parsecache.py)
        self._changed = False
        self.exists = True


# --- keeping comments when a key is deleted -------------------------------------------------
# ruamel stores a comment block that sits *between* two keys on the key above it (as the tail of
# that key's end-of-line comment, or on the last item of its nested block). Deleting the key would
# silently drop the comment that describes the next key; these helpers move that tail onto the
# previous sibling instead.


def _comment_slot(node: Any) -> int:
    return 2 if isinstance(node, CommentedMap) else 0


def _last_leaf(node: Any, key: Any) -> tuple[Any, Any]:
    """The (container, key) whose post-comment is emitted after everything under node[key]."""
    value = node[key]
    while isinstance(value, CommentedMap | CommentedSeq) and len(value) and not value.fa.flow_style():
        node, key = value, (list(value.keys())[-1] if isinstance(value, CommentedMap) else len(value) - 1)
        value = node[key]
    return node, key


def _trailing_lines(node: Any, key: Any) -> str:
    container, leaf = _last_leaf(node, key)
    entry = container.ca.items.get(leaf)
    if not entry:
        return ""
    token = entry[_comment_slot(container)]
    if not isinstance(token, CommentToken) or "\n" not in token.value:
        return ""
    return token.value.split("\n", 1)[1]


def _append_trailing(node: Any, key: Any, tail: str) -> None:
    container, leaf = _last_leaf(node, key)
    slot = _comment_slot(container)
    entry = container.ca.items.setdefault(leaf, [None, None, None, None])
    token = entry[slot]
    if isinstance(token, CommentToken):
        text = token.value if token.value.endswith("\n") else token.value + "\n"
        token.value = text + tail
    else:
        entry[slot] = CommentToken("\n" + tail, CommentMark(0), None)


def _delete_key(node: CommentedMap, key: Any) -> None:
    keys = list(node.keys())
    index = keys.index(key)
    tail = _trailing_lines(node, key)
    del node[key]
    node.ca.items.pop(key, None)
    if not tail.strip():
        return
    if index > 0:
        _append_trailing(node, keys[index - 1], tail)
    elif len(keys) > 1:
        # The first key went: the comment becomes a leading comment of the new first key.
        entry = node.ca.items.setdefault(keys[1], [None, None, None, None])
        entry[1] = [CommentToken(tail, CommentMark(0), None), *(entry[1] or [])]
