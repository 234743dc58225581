"""Loading: find manifest files, parse YAML safely, keep every value's file/line/column.

Parsing uses ruamel.yaml's C parser when available (YAML 1.2 core schema). The common document
(no aliases, tags or merges, no problem) is built straight from the parser's events, keeping one
position per list and map (_fast_documents); any other is composed into ruamel's node tree and
built by our own small constructor, which rejects duplicate keys, bounds alias expansion and
nesting depth, and reports every problem with its position. Any field path can be located later:
from the kept positions, or from the node tree (composed again from the text when needed).
Called by validation; touches only the manifest files it is given (and stdin for `-f -`).

Every input is bounded (docs/manifest.md#limits): a file is checked to be a regular file of at most
MAX_FILE_BYTES before it is read (a FIFO or a device is refused, never read), and each value while
it is built: integers within 64 bits (checked before Python converts the digits), finite floats,
strings of at most MAX_STRING characters, lists and maps of at most MAX_ITEMS entries.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import bounded
from controller.diagnostics import Diagnostic, DiagnosticCode
from controller.errors import NotRegular, TooLarge, UsageError

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
MAX_STRING = 1_000_000  # characters in one string (a key or a value)
MAX_ITEMS = 100_000  # entries in one list or map
INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # what YAML, JSON and Hermes' readers all carry exactly
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# Encrypted secret files kept beside the manifests (SOPS: `secrets.enc.yaml`; docs/manifest.md#from_command)
# are read by `from_command`, never as manifests.
SECRET_SUFFIXES = tuple(mark + suffix for mark in (".enc", ".sops") for suffix in MANIFEST_SUFFIXES)
STDIN = "<stdin>"

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_NULL = re.compile(r"^(~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
# YAML 1.1's boolean words that YAML 1.2 reads as strings: PyYAML's bool resolver, which Hermes'
# own config loader uses (docs/hermes/vocabulary.md#yaml-11-words).
YAML11_BOOLS = {
    word: meaning
    for words, meaning in (("yes Yes YES on On ON", True), ("no No NO off Off OFF", False))
    for word in words.split()
}
_NAN = re.compile(r"^\.(nan|NaN|NAN)$")


class Yaml11Word(str):
    """An unquoted `yes`/`no`/`on`/`off`: a string in YAML 1.2 (so here), a boolean in YAML 1.1
    (so in Hermes' config.yaml). Under `config:` it is given Hermes' meaning (manifests/yaml11.py)."""

    __slots__ = ()

    @property
    def boolean(self) -> bool:
        return YAML11_BOOLS[self]


@dataclass
class Document:
    """One YAML document: its plain data and the node tree that locates any field in it.

    A document read by the fast path (_fast_documents) has no node tree until `locate` needs one:
    then its file's text is composed once more (`origin`), for all of that file's documents.
    Locating is for diagnostics, which are rare; the tree is the larger part of a parsed document.
    """

    source: str
    index: int
    data: Any
    node: Any = field(repr=False)
    base_dir: Path
    _index: dict[int, Any] = field(default_factory=dict, repr=False)  # big mappings' keys (see _step)
    # Where its secret references resolve (from_file, from_command's folder), when not `base_dir`:
    # a document replayed from the apply history keeps its original folder (engine/history.py).
    secret_dir: Path | None = None
    origin: _Origin | None = field(default=None, repr=False, compare=False)

    def locate(self, loc: Iterable[object]) -> tuple[int, int]:
        """1-based (line, column) of the deepest node on the path `loc`."""
        loc = tuple(loc)
        if self.node is None and self.origin is not None:
            found = self.origin.locate(self.data, loc)
            if found is not None:
                return found
            self.node = self.origin.node(self.index)
        return locate_node(self.node, loc, self._index)


class _Origin:
    """What the fast path keeps of a file to locate fields without a node tree: the position of each
    list and map it built, and the text, to compose the node trees if a path ends elsewhere."""

    def __init__(self, text: str, positions: dict[int, int]) -> None:
        self.text = text
        # id(list or dict) -> where locate_node reports it: the key's position for a map's value,
        # its own for a list's item or a document's top (line << 32 | column, both 0-based).
        self.positions = positions
        self.nodes: list[Any] | None = None

    def locate(self, data: Any, loc: tuple[object, ...]) -> tuple[int, int] | None:
        """What locate_node gives for `loc` in `data` (a document this origin built), when the path
        goes through lists and maps only; None when it reaches a scalar (the tree knows where)."""
        positions = self.positions
        position = positions.get(id(data))
        if position is None:
            return None
        node = data
        for part in loc:
            if node.__class__ is list:
                if not isinstance(part, int) or not 0 <= part < len(node):
                    break
                node = node[part]
            else:  # a dict: every collection with a position is a list or a dict
                try:
                    if part not in node:
                        break
                except TypeError:  # unhashable: the tree's key lookup says "not there" the same way
                    return None
                node = node[part]
            if node.__class__ is not list and node.__class__ is not dict:
                return None
            position = positions.get(id(node))
            if position is None:  # not one the fast path built (never, unless the data was changed)
                return None
        return (position >> 32) + 1, (position & 0xFFFFFFFF) + 1

    def node(self, index: int) -> Any:
        if self.nodes is None:
            with gc_paused():
                self.nodes = list(_compose_all(self.text))
        return self.nodes[index]


@dataclass(frozen=True)
class Kept:
    """What outlives validation of a document (for the apply history): its data and where it came
    from, without the node tree, which is the larger part of a parsed document."""

    source: str
    base_dir: Path
    secret_dir: Path | None
    data: Any

    @classmethod
    def of(cls, doc: Document) -> Kept:
        return cls(doc.source, doc.base_dir, doc.secret_dir, doc.data)


class _LoadProblem(Exception):
    def __init__(self, message: str, node: Any = None, hint: str = "", code: DiagnosticCode = "yaml") -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.hint = hint
        self.code = code


# --- finding files ---------------------------------------------------------------------------


def discover(paths: list[str], *, recursive: bool = True, skip: Path | None = None) -> list[str]:
    """Expand `-f` arguments into a sorted, de-duplicated list of files ("-" is stdin).

    A folder is read with its sub-folders (a fleet split over `bots/`, `rooms/` is one set);
    names starting with "." and encrypted secret files (`*.enc.yaml`, `*.sops.yaml`) are skipped.
    `recursive=False` reads only the folder itself.
    `skip` is the Hermes home: a recursive search never reads its files (profile.yaml,
    config.yaml) as manifests when the home sits inside the manifests' folder.
    """
    found: list[str] = []
    for raw in paths:
        if raw == "-":
            found.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            found.extend(_files_in(path, recursive, skip.resolve() if skip is not None else None))
        elif path.name.endswith(SECRET_SUFFIXES):
            raise UsageError(
                f"{raw}: an encrypted secrets file (*.enc.yaml, *.sops.yaml) is never read as a manifest",
                hint="pass the manifests' folder or files; a from_command secret reads this file",
            )
        elif path.exists():
            found.append(str(path))
        else:
            raise UsageError(f"{raw}: no such file or folder", hint="check the -f path")
    unique = list(dict.fromkeys(found))
    if not unique:
        raise UsageError(
            f"no manifest files (*.yaml, *.yml, *.json) found in {', '.join(paths)}",
            hint="check the -f path (sub-folders are searched; names starting with '.' and *.enc.yaml/*.sops.yaml are skipped)"
            if recursive
            else "check the -f path",
        )
    return unique


def _files_in(folder: Path, recursive: bool, skip: Path | None = None) -> Iterator[str]:
    if recursive:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (skip is None or (Path(root) / d).resolve() != skip))
            for name in sorted(files):
                if is_manifest_name(name):
                    yield str(Path(root) / name)
    else:
        for child in sorted(folder.iterdir()):
            if child.is_file() and is_manifest_name(child.name):
                yield str(child)


def is_manifest_name(name: str) -> bool:
    """A file a folder read takes as a manifest: *.yaml, *.yml, *.json, not hidden, not encrypted secrets."""
    return name.endswith(MANIFEST_SUFFIXES) and not name.startswith(".") and not name.endswith(SECRET_SUFFIXES)


# --- reading and parsing ---------------------------------------------------------------------


def load_files(files: list[str], *, fork: bool | None = None) -> tuple[list[Document], list[Diagnostic]]:
    """Parse every file; a file with a problem yields a diagnostic and no documents.

    A large many-file fleet has its last files parsed in a forked child meanwhile (parallel.py;
    `fork` True forces one for tests, False forbids it). The documents and diagnostics are the same
    either way, in the order of `files`.
    """
    child = None
    if fork is not False and len(files) > 1:  # one file (the commonest run) needs no import
        from controller.manifests import parallel

        child = parallel.start(files, fast_parse, force=bool(fork))
    documents: list[Document] = []
    problems: list[Diagnostic] = []
    try:
        own = files if child is None else files[: len(files) - len(child.names)]
        for name in own:
            _load_one(name, documents, problems)
        if child is not None:
            parsed = child.results()
            for name in child.names:
                got = parsed.get(name)
                if got is None:
                    _load_one(name, documents, problems)
                else:
                    text, fast, positions = got
                    documents.extend(_fast_to_documents(text, fast, positions, name, Path(name).parent))
    finally:
        if child is not None:
            child.close()
    return documents, problems


def _load_one(name: str, documents: list[Document], problems: list[Diagnostic]) -> None:
    source = STDIN if name == "-" else name
    base_dir = Path.cwd() if name == "-" else Path(name).parent
    try:
        text = _read_text(name)
        documents.extend(parse_text(text, source=source, base_dir=base_dir))
    except _FileProblem as exc:
        problems.append(
            Diagnostic(
                severity="error",
                file=source,
                line=exc.line,
                column=exc.column,
                path="",
                message=exc.message,
                hint=exc.hint,
                code=exc.code,
            )
        )


def fast_parse(name: str) -> tuple[str, list[tuple[int, Any]], dict[int, int]] | None:
    """The text of file `name`, its documents and positions by the fast path; None when reading or
    the fast path fails (the caller then loads the file the usual way, which reports why)."""
    if name == "-":
        return None
    try:
        text = _read_text(name)
    except _FileProblem:
        return None
    fast = _fast_documents(text)
    return None if fast is None else (text, *fast)


class _FileProblem(Exception):
    def __init__(self, message: str, *, hint: str = "", code: DiagnosticCode = "unreadable", line: int = 0, column: int = 0):
        super().__init__(message)
        self.message, self.hint, self.code, self.line, self.column = message, hint, code, line, column


def _read_text(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    else:
        try:
            data = bounded.read_bytes(name, MAX_FILE_BYTES)  # stat first: a FIFO or a device is never read
        except TooLarge as exc:
            raise _FileProblem(
                f"file is {exc.size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                hint="split the fleet into several files or folders",
                code="too_large",
            ) from None
        except NotRegular as exc:
            raise _FileProblem(
                f"this is {exc.kind}, not a regular file; nothing was read from it",
                hint="pass manifest files (or folders of them) with -f; use -f - to read a stream from stdin",
            ) from None
        except OSError as exc:
            raise _FileProblem(f"cannot read the file: {exc.strerror}", hint="check the path and permissions") from None
    if len(data) > MAX_FILE_BYTES:
        raise _FileProblem(
            f"input is over the {MAX_FILE_BYTES:,}-byte limit", code="too_large", hint="split the fleet into several files"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        line, column = _byte_position(data, nul)
        raise _FileProblem(
            "this is a binary file, not YAML (it contains NUL bytes)",
            code="binary",
            hint="pass only manifest files with -f",
            line=line,
            column=column,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _byte_position(data, exc.start)
        raise _FileProblem(
            f"not UTF-8 text (bad byte 0x{data[exc.start]:02x} at offset {exc.start})",
            code="encoding",
            hint="save the file as UTF-8",
            line=line,
            column=column,
        ) from None


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a byte offset; the column counts the bytes of that line."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - start + 1


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a burst of allocation that makes no cycles.

    Composing and validating a fleet builds hundreds of thousands of long-lived objects; the
    collector re-scanning them again and again made both superlinear (10,000 bots: parsing
    2.9 s -> 0.7 s, validation 12 s -> 2 s without it). Reference counting still frees memory.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Everything allocated meanwhile sits in the youngest generation; the first collection
            # after enable() would scan it all at once. freeze() + unfreeze() moves it to the oldest
            # generation without a scan (it is long-lived: the loaded fleet).
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def parse_text(text: str, *, source: str, base_dir: Path) -> list[Document]:
    """All non-empty documents in `text`; raises _FileProblem on a syntax error."""
    with gc_paused():
        return _parse_text(text, source=source, base_dir=base_dir)


def _parse_text(text: str, *, source: str, base_dir: Path) -> list[Document]:
    fast = _fast_documents(text)
    if fast is not None:
        return _fast_to_documents(text, *fast, source, base_dir)
    return _node_documents(text, source=source, base_dir=base_dir)


def _fast_to_documents(
    text: str, documents: list[tuple[int, Any]], positions: dict[int, int], source: str, base_dir: Path
) -> list[Document]:
    origin = _Origin(text, positions)
    return [Document(source, index, data, None, base_dir, origin=origin) for index, data in documents]


def _node_documents(text: str, *, source: str, base_dir: Path) -> list[Document]:
    """The reference path: compose each document's node tree, then construct its data from it.
    Every problem (syntax, duplicate key, bounds, aliases, depth) is reported from here."""
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.reader import ReaderError

    budget = _Budget(max(200_000, 20 * len(text)))
    documents: list[Document] = []
    try:
        for index, node in enumerate(_compose_all(text)):
            if node is None:
                continue
            try:
                data = _construct_document(node, budget)
            except _LoadProblem as exc:
                line, column = _mark(exc.node) if exc.node is not None else (0, 0)
                raise _FileProblem(exc.message, hint=exc.hint, code=exc.code, line=line, column=column) from None
            if data is None:
                continue
            documents.append(Document(source, index, data, node, base_dir))
    except _LoadProblem as exc:  # nesting too deep for the composer (COMPOSE_DEPTH)
        line, column = _mark(exc.node) if exc.node is not None else (0, 0)
        raise _FileProblem(exc.message, hint=exc.hint, code=exc.code, line=line, column=column) from None
    except MarkedYAMLError as exc:
        raise _syntax_problem(exc, text) from None
    except ReaderError as exc:  # a control character: not a MarkedYAMLError, so it has no mark
        pos = max(0, min(int(exc.position), len(text)))
        line, column = text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise _FileProblem(
            f"YAML does not allow the control character U+{char:04X} here",
            code="yaml",
            hint="remove it, or write it as an escape in a double-quoted string",
            line=line,
            column=column,
        ) from None
    except RecursionError:
        raise _FileProblem(f"nesting is deeper than {MAX_DEPTH} levels", code="yaml", hint="flatten the document") from None
    return documents


# The C composer recurses once per nesting level, in C, with no limit of its own: some 30,000
# levels (`[[[[...`, 60 kB) overflowed the C stack and killed the process. The composer calls
# descend_resolver/ascend_resolver around every node, so they count the levels and stop it far
# past MAX_DEPTH (which the constructor enforces with the exact position) and far short of the stack.
COMPOSE_DEPTH = 1_000


def _parser_class() -> Any:
    """A composer that builds ruamel's node tree: the C one (ruamel.yaml.clib) when available."""
    try:
        from _ruamel_yaml import CParser  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - pure-Python fallback (no ruamel.yaml.clib)
        return _loader_class()
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
    from ruamel.yaml.resolver import BaseResolver

    tags = {
        ScalarNode: BaseResolver.DEFAULT_SCALAR_TAG,
        SequenceNode: BaseResolver.DEFAULT_SEQUENCE_TAG,
        MappingNode: BaseResolver.DEFAULT_MAPPING_TAG,
    }

    class Parser(CParser):  # type: ignore[misc]  # ruamel.yaml.clib is a C extension without types
        """The bare C parser + composer (no constructor or resolver objects behind it). Our
        constructor resolves plain scalars itself, so every node gets the shared default Tag:
        each caches its text, so node.tag stays cheap, and `ctag is` tells the common case."""

        DEFAULT_SCALAR_TAG = BaseResolver.DEFAULT_SCALAR_TAG
        DEFAULT_SEQUENCE_TAG = BaseResolver.DEFAULT_SEQUENCE_TAG
        DEFAULT_MAPPING_TAG = BaseResolver.DEFAULT_MAPPING_TAG

        def __init__(self, text: str) -> None:
            super().__init__(text)
            depth = 0  # in a closure: an attribute of this C-backed object costs 0.1 s per million nodes

            def descend(parent: Any, index: Any) -> None:
                nonlocal depth
                depth += 1
                if depth > COMPOSE_DEPTH:
                    raise _LoadProblem(f"nesting is deeper than {MAX_DEPTH} levels", parent, hint="flatten the document")

            def ascend() -> None:
                nonlocal depth
                depth -= 1

            self.descend_resolver = descend
            self.ascend_resolver = ascend

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            return tags[kind]

    return Parser


def _loader_class() -> Any:
    from ruamel.yaml.loader import BaseLoader as Base
    from ruamel.yaml.nodes import ScalarNode, SequenceNode

    class Loader(Base):
        """The base loader without path resolution: our constructor resolves plain scalars itself,
        so the composer's per-node resolver calls (half a million for 10,000 bots) do nothing."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            # The shared default Tag objects: each caches its text, so node.tag stays cheap.
            if kind is ScalarNode:
                return self.DEFAULT_SCALAR_TAG
            return self.DEFAULT_SEQUENCE_TAG if kind is SequenceNode else self.DEFAULT_MAPPING_TAG

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

    return Loader


_LOADER: Any = None
_DEFAULT_TAGS: tuple[Any, ...] = ()  # (scalar, sequence, mapping) Tag objects our loader hands out
_NODE_CLASSES: tuple[Any, ...] = ()  # (ScalarNode, SequenceNode, MappingNode)


def _loader() -> Any:
    global _LOADER, _DEFAULT_TAGS, _NODE_CLASSES
    if _LOADER is None:
        from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

        _LOADER = _parser_class()
        _DEFAULT_TAGS = (_LOADER.DEFAULT_SCALAR_TAG, _LOADER.DEFAULT_SEQUENCE_TAG, _LOADER.DEFAULT_MAPPING_TAG)
        _NODE_CLASSES = (ScalarNode, SequenceNode, MappingNode)
    return _LOADER


def _compose_all(text: str) -> Iterator[Any]:
    loader = _loader()(text)
    try:
        while loader.check_node():
            yield loader.get_node()
    finally:
        dispose = getattr(loader, "dispose", None)
        if dispose:
            dispose()


# --- the fast path: plain data straight from the parser's events -------------------------------


class _Slow(Exception):
    """The fast path met something it leaves to the node path (which also reports every problem)."""


_EVENTS: Any = None  # (parser class, ScalarEvent, MappingStartEvent, SequenceStartEvent, ...)


def _event_classes() -> Any:
    """The C parser and the event classes it makes. The C parser builds each event through the
    classes' Python __init__ chains (three levels, a default-argument check): subclasses that set
    the very same slots directly, put in its module, make the parse of a 10,000-bot fleet some
    15% faster. They are subclasses, so every other reader of ruamel's events sees what it did."""
    global _EVENTS
    if _EVENTS is not None:
        return _EVENTS
    from ruamel.yaml import events

    parser = _loader()
    try:
        import _ruamel_yaml as clib
    except ImportError:  # pragma: no cover - pure-Python fallback (no ruamel.yaml.clib)
        clib = None

    class ScalarEvent(events.ScalarEvent):
        __slots__ = ()

        def __init__(
            self,
            anchor: Any,
            tag: Any,
            implicit: Any,
            value: Any,
            start_mark: Any = None,
            end_mark: Any = None,
            style: Any = None,
            comment: Any = None,
        ) -> None:
            self.anchor, self.ctag, self.implicit, self.value, self.style = anchor, tag, implicit, value, style
            self.start_mark, self.end_mark, self.comment = start_mark, end_mark, comment

    def start_init(
        self: Any,
        anchor: Any,
        tag: Any,
        implicit: Any,
        start_mark: Any = None,
        end_mark: Any = None,
        flow_style: Any = None,
        comment: Any = None,
        nr_items: Any = None,
    ) -> None:
        self.anchor, self.ctag, self.implicit, self.flow_style, self.nr_items = anchor, tag, implicit, flow_style, nr_items
        self.start_mark, self.end_mark, self.comment = start_mark, end_mark, comment

    def end_init(self: Any, start_mark: Any = None, end_mark: Any = None, comment: Any = None) -> None:
        self.start_mark, self.end_mark, self.comment = start_mark, end_mark, comment

    def start(base: type) -> type:
        return type(base.__name__, (base,), {"__slots__": (), "__init__": start_init, "__module__": __name__})

    def end(base: type) -> type:
        return type(base.__name__, (base,), {"__slots__": (), "__init__": end_init, "__module__": __name__})

    light = {
        "ScalarEvent": ScalarEvent,
        "MappingStartEvent": start(events.MappingStartEvent),
        "SequenceStartEvent": start(events.SequenceStartEvent),
        "MappingEndEvent": end(events.MappingEndEvent),
        "SequenceEndEvent": end(events.SequenceEndEvent),
    }
    if (
        clib is not None
        and all(getattr(clib, name, None) is getattr(events, name) for name in light)
        and all(_builds_alike(cls, getattr(events, name)) for name, cls in light.items())
    ):
        for name, cls in light.items():
            setattr(clib, name, cls)
    else:  # pragma: no cover - another clib: keep its classes
        light = {name: getattr(clib or events, name) for name in light}
    _EVENTS = (
        parser,
        light["ScalarEvent"],
        light["MappingStartEvent"],
        light["SequenceStartEvent"],
        light["MappingEndEvent"],
        light["SequenceEndEvent"],
        events.DocumentStartEvent,
        events.StreamEndEvent,
        (events.DocumentEndEvent, events.StreamStartEvent),
    )
    return _EVENTS


def _builds_alike(light: type, base: type) -> bool:
    """`light(...)` sets every slot as `base(...)` does (a ruamel release that changed its events
    keeps its own classes: nothing is put into its module then)."""
    args: tuple[Any, ...] = (
        ("a", "t", (True, False), "v", 1, 2, "'", None) if "Scalar" in base.__name__ else ("a", "t", True, 1, 2, True)
    )
    if "End" in base.__name__:
        args = (1, 2)
    slots = [name for klass in base.__mro__ for name in getattr(klass, "__slots__", ())]
    try:
        made, reference = light(*args), base(*args)
    except Exception:
        return False
    missing = object()
    return all(getattr(made, name, missing) == getattr(reference, name, missing) for name in slots)


def _fast_documents(text: str) -> tuple[list[tuple[int, Any]], dict[int, int]] | None:
    """(index, data) of each non-empty document in `text`, built from the parser's events with no
    node tree, and the positions of its lists and maps (_Origin); None when the text needs the
    node path.

    It takes the common case only, and gives exactly the data _node_documents gives: no aliases
    or tags (so no alias budget to spend), no '<<' merge key.
    Anything else it would have to judge (a syntax error, a duplicate or non-string key, a number
    out of range, a value over its bound, nesting past MAX_DEPTH) sends the whole text to the node
    path, which reports it as before: every diagnostic comes from one place.
    """
    try:
        return _events_to_data(text)
    except Exception:
        return None


def _events_to_data(text: str) -> tuple[list[tuple[int, Any]], dict[int, int]]:
    parser_class, scalar, map_start, seq_start, map_end, seq_end, doc_start, stream_end, ignored = _event_classes()
    get = parser_class(text).get_event
    # An anchor without an alias changes nothing; an alias sends the text to the node path. So the
    # alias budget (at least 20 values per character of the text) cannot run out here: every value
    # takes a character of its own at least ('-', ':', ',', '?', '---' or itself).
    # A tag starts with '!', a string over MAX_STRING needs a text as long: each check is made
    # only when the text could need it.
    tags = "!" in text
    long = len(text) > MAX_STRING
    max_depth, max_items = MAX_DEPTH, MAX_ITEMS
    maybe_not_str = _MAYBE_NOT_STR
    resolve = _resolve_plain
    documents: list[tuple[int, Any]] = []
    positions: dict[int, int] = {}
    index = -1
    stack: list[tuple[Any, Any]] = []  # (enclosing collection, this one's key in it) per open collection
    current: Any = None  # the open list or dict (None: at the document's top)
    want_key = _Slow  # marker: `key is want_key` means a mapping waits for its next key
    key: Any = None  # the key the next value goes under (None: `current` is a list, or the top)
    key_event: Any = None  # the event of that key
    while True:
        event = get()
        kind = event.__class__
        if kind is scalar:
            value = event.value
            if (tags and event.ctag is not None) or (long and len(value) > MAX_STRING):
                raise _Slow
            if key is want_key:
                if (value == "<<" and not event.style) or value in current:
                    raise _Slow  # a merge, or a duplicate key (an error)
                key = value
                key_event = event
                continue
            if not event.style and (not value or value[0] in maybe_not_str):
                value = resolve(value)
            if key is not None:
                current[key] = value
                key = want_key
            elif current is not None:
                current.append(value)
            elif value is not None:
                documents.append((index, value))
        elif kind is map_start or kind is seq_start:
            if key is want_key or len(stack) >= max_depth or (tags and event.ctag is not None):
                raise _Slow  # a collection as a key, or nesting the node path refuses (or guards)
            new: Any = {} if kind is map_start else []
            if key is not None:
                current[key] = new
                mark = key_event.start_mark
            else:
                if current is not None:
                    current.append(new)
                mark = event.start_mark
            positions[id(new)] = mark.line << 32 | mark.column
            stack.append((current, key))
            current = new
            key = want_key if kind is map_start else None
        elif kind is map_end or kind is seq_end:
            if len(current) > max_items:
                raise _Slow
            done = current
            current, key = stack.pop()
            if key is not None:
                key = want_key
            elif current is None:
                documents.append((index, done))
        elif kind is doc_start:
            index += 1
        elif kind is stream_end:
            break
        elif kind not in ignored:
            raise _Slow  # an alias
    return documents, positions


def _syntax_problem(exc: Any, text: str) -> _FileProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    problem = (getattr(exc, "problem", None) or str(exc)).strip()
    context = (getattr(exc, "context", None) or "").strip()
    hint = "fix the YAML syntax at that position"
    offending = _char_at(text, line, column)
    if offending == "\t" or "tab" in problem.lower():
        problem = "a tab character where YAML needs spaces"
        hint = "indent with spaces, never tabs"
    elif "undefined alias" in problem:
        hint = "define the &anchor before using *alias"
    message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    return _FileProblem(message, hint=hint, code="yaml", line=line, column=column)


def _duplicate_key(key: str, key_node: Any) -> _LoadProblem:
    return _LoadProblem(
        f"duplicate key {key!r} in the same mapping", key_node, hint="remove one of them (YAML keeps only the last, silently)"
    )


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    if 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]):
        return lines[line - 1][column - 1]
    return ""


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, node: Any) -> None:
        self.used += 1
        if self.used > self.limit:
            raise _LoadProblem(
                f"the document expands to more than {self.limit:,} values through YAML aliases",
                node,
                hint="this looks like an alias bomb; remove the nested *aliases",
            )


class _Retrace(Exception):
    """The fast constructor met a problem that a cycle of aliases may have caused."""


def _construct_document(node: Any, budget: _Budget) -> Any:
    """The plain data of a document's node tree (see _construct for the rules).

    `_build` is `_construct` without its per-collection check for recursive aliases (a set of the
    collections being built, and a try/finally for each). Without the check, a recursive alias
    runs round its cycle until it exceeds MAX_DEPTH or the alias budget; every other problem it
    meets on the way it would have met on the first round already. So when `_build` stops on the
    depth or the budget, `_construct` runs the document again to tell which problem it is, from
    the same budget; otherwise both give the same data or the same problem.
    """
    used = budget.used
    try:
        return _build(node, budget, 0)
    except _Retrace:
        budget.used = used
        return _construct(node, budget, depth=0, active=set())


def _build(node: Any, budget: _Budget, depth: int) -> Any:
    budget.used += 1
    if budget.used > budget.limit or depth > MAX_DEPTH:
        raise _Retrace
    value = node.value
    cls = node.__class__
    scalar_cls, sequence_cls, mapping_cls = _NODE_CLASSES
    if cls is scalar_cls:
        if len(value) > MAX_STRING:
            _too_big(node)
        if node.ctag is _DEFAULT_TAGS[0]:
            if node.style or (value and value[0] not in _MAYBE_NOT_STR):
                return value
            return _resolve_plain(value, node)
        return _scalar(node)
    if len(value) > MAX_ITEMS:
        _too_big(node)
    if cls is sequence_cls:
        if node.ctag is not _DEFAULT_TAGS[1]:
            _check_tag(node, _SEQ)
        return [_build(item, budget, depth + 1) for item in value]
    if cls is not mapping_cls:  # pragma: no cover - the composer makes only these three
        raise _Retrace
    if node.ctag is not _DEFAULT_TAGS[2]:
        _check_tag(node, _MAP)
    scalar_tag = _DEFAULT_TAGS[0]
    inline = depth < MAX_DEPTH  # a scalar value one level down is within the depth bound
    result: dict[str, Any] = {}
    merged: dict[str, Any] | None = None
    for key_node, value_node in value:
        if key_node.__class__ is not scalar_cls:
            raise _LoadProblem("mapping keys must be plain strings", key_node, hint="quote the key")
        key = key_node.value
        if len(key) > MAX_STRING:
            _too_big(key_node)
        if key == "<<" and not key_node.style:
            if merged is None:
                merged = {}
            for source in _merge_sources(value_node):
                for k, v in _build(source, budget, depth + 1).items():
                    merged.setdefault(k, v)
            continue
        if key in result:
            raise _duplicate_key(key, key_node)
        if inline and value_node.__class__ is scalar_cls and value_node.ctag is scalar_tag:
            # _build for the commonest node, inline: a plain or quoted string, number or bool
            budget.used += 1
            if budget.used > budget.limit:
                raise _Retrace
            text = value_node.value
            if len(text) > MAX_STRING:
                _too_big(value_node)
            if value_node.style or (text and text[0] not in _MAYBE_NOT_STR):
                result[key] = text
            else:
                result[key] = _resolve_plain(text, value_node)
        else:
            result[key] = _build(value_node, budget, depth + 1)
    if merged:
        for k, v in merged.items():
            result.setdefault(k, v)
    return result


def _construct(node: Any, budget: _Budget, depth: int, active: set[int]) -> Any:
    budget.used += 1
    if budget.used > budget.limit:
        budget.spend(node)  # raises, with the message
    if depth > MAX_DEPTH:
        raise _LoadProblem(f"nesting is deeper than {MAX_DEPTH} levels", node, hint="flatten the document")
    kind = node.id
    if len(node.value) > (MAX_STRING if kind == "scalar" else MAX_ITEMS):
        _too_big(node)
    if kind == "scalar":
        if node.ctag is _DEFAULT_TAGS[0]:  # the common case, without turning the Tag into text
            return _resolve_plain(node.value, node) if not node.style else node.value
        return _scalar(node)
    if id(node) in active:
        raise _LoadProblem(
            "an alias refers to a node that contains it (a recursive structure)", node, hint="remove the recursive *alias"
        )
    active.add(id(node))
    try:
        if kind == "sequence":
            _check_tag(node, _SEQ)
            return [_construct(item, budget, depth + 1, active) for item in node.value]
        _check_tag(node, _MAP)
        return _mapping(node, budget, depth, active)
    finally:
        active.discard(id(node))


def _mapping(node: Any, budget: _Budget, depth: int, active: set[int]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    merged: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if key_node.id != "scalar":
            raise _LoadProblem("mapping keys must be plain strings", key_node, hint="quote the key")
        key = key_node.value
        if len(key) > MAX_STRING:
            _too_big(key_node)
        if key == "<<" and not key_node.style:
            for source in _merge_sources(value_node):
                for k, v in _construct(source, budget, depth + 1, active).items():
                    merged.setdefault(k, v)
            continue
        if key in result:
            raise _duplicate_key(key, key_node)
        result[key] = _construct(value_node, budget, depth + 1, active)
    for k, v in merged.items():
        result.setdefault(k, v)
    return result


def _merge_sources(node: Any) -> list[Any]:
    if node.id == "mapping":
        return [node]
    if node.id == "sequence" and all(item.id == "mapping" for item in node.value):
        return list(node.value)
    raise _LoadProblem("a '<<' merge key needs a mapping or a list of mappings", node)


def _check_tag(node: Any, expected: str) -> None:
    if node.ctag in _DEFAULT_TAGS:
        return
    if node.tag not in (expected, None, "!"):  # !!python/..., !!set, !!omap: not ours to construct
        raise _LoadProblem(f"unsupported YAML tag {node.tag}", node, hint="remove the tag")


def _scalar(node: Any) -> Any:
    value: str = node.value
    tag = node.tag
    if tag == _STR and not node.style:  # plain (unquoted): '' from the C composer, None from Python
        return _resolve_plain(value, node)
    if tag in (_STR, "!", None):
        return value
    if tag == "tag:yaml.org,2002:int" and _INT.match(value):
        return _integer(value, 10, node)
    if tag == "tag:yaml.org,2002:float" and _FLOAT.match(value):
        return _finite(float(value), value, node)
    if tag == "tag:yaml.org,2002:bool" and value in _BOOL:
        return _BOOL[value]
    if tag == "tag:yaml.org,2002:null":
        return None
    raise _LoadProblem(f"unsupported YAML tag {tag} for {value[:40]!r}", node, hint="remove the tag")


_MAYBE_NOT_STR = frozenset("~nNtTfF0123456789+-.yYoO")  # yYoO: the YAML 1.1 words


def _resolve_plain(value: str, node: Any = None) -> Any:
    """YAML 1.2 core schema for an unquoted scalar (the same rules ruamel.yaml applies)."""
    if value and value[0] not in _MAYBE_NOT_STR:
        return value  # most plain scalars are words: no null, bool or number starts like this
    if value in YAML11_BOOLS:
        return Yaml11Word(value)
    if _NULL.match(value):
        return None
    if value in _BOOL:
        return _BOOL[value]
    if _INT.match(value):
        return _integer(value, 10, node)
    if _INT_OCT.match(value):
        return _integer(value[2:], 8, node, value)
    if _INT_HEX.match(value):
        return _integer(value[2:], 16, node, value)
    if _FLOAT.match(value):
        return _finite(float(value), value, node)
    if _INF.match(value) or _NAN.match(value):
        return _finite(float("nan"), value, node)
    return value


# Digits that certainly fit in 64 bits, per base; longer numbers are refused before conversion
# (Python refuses to convert more than 4,300 decimal digits, and a huge value breaks JSON and Hermes).
_SAFE_DIGITS = {10: 19, 8: 22, 16: 16}


def _integer(digits: str, base: int, node: Any, text: str | None = None) -> int:
    text = text or digits
    plain = digits.lstrip("+-").lstrip("0") or "0"
    if len(plain) <= _SAFE_DIGITS[base]:
        value = int(digits, base)
        if INT_MIN <= value <= INT_MAX:
            return value
    raise _LoadProblem(
        f"the number {_clip(text)} is out of range: numbers must lie between {INT_MIN:,} and {INT_MAX:,}",
        node,
        hint="quote it if it is meant as text (a version, an id)",
        code="invalid_value",
    )


def _finite(value: float, text: str, node: Any) -> float:
    if math.isfinite(value):
        return value
    raise _LoadProblem(
        f"{_clip(text)} is not a finite number (infinity and NaN never compare equal after a round trip)",
        node,
        hint="write a finite number, or quote it if it is meant as text",
        code="invalid_value",
    )


def _too_big(node: Any) -> None:
    if node.id == "scalar":
        what, limit = f"a string of {len(node.value):,} characters", f"{MAX_STRING:,}-character"
    else:
        kind = "list" if node.id == "sequence" else "map"
        what, limit = f"a {kind} of {len(node.value):,} entries", f"{MAX_ITEMS:,}-entry"
    raise _LoadProblem(f"{what} is over the {limit} limit", node, hint="split it up or shorten it", code="invalid_value")


def _clip(text: str, width: int = 40) -> str:
    return repr(text) if len(text) <= width else repr(text[: width - 3]) + f"... ({len(text):,} characters)"


# --- locating --------------------------------------------------------------------------------


def _mark(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


def locate_node(node: Any, loc: tuple[object, ...], index: dict[int, Any] | None = None) -> tuple[int, int]:
    """Walk `loc` through the node tree; return the deepest position reached (key position for keys).

    `index` (one per document) caches the keys of every mapping walked through, so locating each of
    N diagnostics in one big mapping costs O(1) instead of a scan of its N keys (O(N^2) in all).
    """
    position = _mark(node)
    for part in loc:
        step = _step(node, part, {} if index is None else index)
        if step is None:
            break
        key_node, node = step
        position = _mark(key_node if key_node is not None else node)
    return position


def _step(node: Any, part: object, index: dict[int, Any]) -> tuple[Any, Any] | None:
    if node.id == "sequence" and isinstance(part, int):
        return (None, node.value[part]) if 0 <= part < len(node.value) else None
    if node.id != "mapping":
        return None
    cached = index.get(id(node))
    if cached is None:
        keys: dict[object, tuple[Any, Any]] = {}
        merged: list[Any] = []  # mappings whose keys arrived through a '<<' merge
        for key_node, value_node in node.value:
            if key_node.id != "scalar":
                continue
            if key_node.value == "<<" and not key_node.style:
                if value_node.id == "mapping":
                    merged.append(value_node)
                elif value_node.id == "sequence":
                    merged.extend(item for item in value_node.value if item.id == "mapping")
            keys.setdefault(key_node.value, (key_node, value_node))
        cached = index[id(node)] = (keys, merged)
    keys, merged = cached
    found = keys.get(part)
    if found is not None:
        return found
    for source in merged:
        found = _step(source, part, index)
        if found is not None:
            return found
    return None
