"""Validation: documents -> models -> semantic checks across the whole set -> DesiredState.

Three passes, each adding `Diagnostic`s that point at file:line:column and a field path:
1. envelope and schema (pydantic, with "did you mean" for unknown fields);
2. gathering: which objects exist, in which fleet, and where they were declared;
3. semantic rules that need the whole set (names, references, schedules, secrets, files, tags).
Pure apart from reading the soul/avatar/picture files a manifest references. Called by the CLI
verbs and the reconciler; an error here means nothing else runs (PRODUCT.md safety rule 1).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import typing
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, TypeAdapter, ValidationError

from controller import bounded
from controller.diagnostics import Diagnostic, DiagnosticCode, Severity, format_path
from controller.errors import NotRegular, ScheduleError, TooLarge
from controller.hermes import DEFAULT_PROFILE, cronjobs, image_extension, naming, schedules
from controller.hermes.env import ENV_NAME_DENYLIST
from controller.hermes.env import value_problem as env_value_problem
from controller.hermes.urls import clear_text_allowed
from controller.manifests import desired as d
from controller.manifests import effects, hermes_names, yaml11
from controller.manifests.loading import Document, Kept
from controller.manifests.models import (
    API_VERSION,
    KINDS,
    Bot,
    BotDefaults,
    BotDocument,
    FleetDocument,
    Peer,
    PeerDocument,
    PolicyDocument,
    PolicySpec,
    Room,
    RoomDocument,
    Routine,
    RoutineDocument,
    SecretRef,
    Section,
    SectionDocument,
    Tts,
)
from controller.manifests.models.base import assemble
from controller.manifests.models.bots import BotSpec
from controller.manifests.models.documents import RoutineDocSpec

DOCUMENT_CLASSES: dict[str, type[BaseModel]] = {
    "Fleet": FleetDocument,
    "Bot": BotDocument,
    "Section": SectionDocument,
    "Room": RoomDocument,
    "Routine": RoutineDocument,
    "Peer": PeerDocument,
    "Policy": PolicyDocument,
}
MIN_ROUTINE_GAP_MINUTES = 5
MAX_SOUL_BYTES = 1_000_000
MAX_IMAGE_BYTES = 2_000_000
MAX_ENV_VALUE_BYTES = 64 * 1024  # one environment variable (a from_file secret has the same bound)
MAX_SUGGESTIONS = 1000  # "did you mean" hints per run (the outputs show at most diagnostics.MAX_SHOWN)
BOT_COVERED = ("model", "toolsets", "skills", "mcp_servers", "tts", "checkpoints", "bot_peers")
INSTALL_COVERED = (
    "checkpoints",
    "gateway.bot_loop_guard",
    "agent.bot_mode_protocol",
    "auxiliary.group_router",
    "bot_peers",
)
TTS_PROVIDER_FIELDS = tuple(f for f in Tts.model_fields if f != "provider")
_UNION_TAGS = re.compile(r"^(SecretRef|str|int|float|bool|none|function-.*|constrained-.*|literal\[.*|json-or-python.*|\[key\])$")


@dataclass
class Declared:
    """One object as declared: the model, the document it came from and its field path."""

    obj: Any
    doc: Document
    loc: tuple[object, ...]
    named_at: tuple[object, ...] | None = None  # one-object documents: the name is metadata.name

    def at(self, *more: object) -> tuple[Document, tuple[object, ...]]:
        if more and more[0] == "name" and self.named_at is not None:
            return self.doc, self.named_at + more[1:]
        return self.doc, self.loc + more

    @property
    def base_dir(self) -> Path:
        return self.doc.base_dir

    @property
    def secret_dir(self) -> Path:
        """Where this object's secret references resolve (Document.secret_dir)."""
        return self.doc.secret_dir or self.doc.base_dir


@dataclass
class Gathered:
    fleet_names: dict[str, Declared] = field(default_factory=dict)
    explicit_fleets: list[tuple[str, Declared]] = field(default_factory=list)
    bots: list[Declared] = field(default_factory=list)
    sections: list[Declared] = field(default_factory=list)
    rooms: list[Declared] = field(default_factory=list)
    peers: list[Declared] = field(default_factory=list)
    routines: list[tuple[str, Declared]] = field(default_factory=list)  # (bot name, routine)
    policies: list[Declared] = field(default_factory=list)


@dataclass
class ValidationResult:
    diagnostics: list[Diagnostic]
    state: d.DesiredState | None
    files: list[str]
    documents: int
    loaded: list[Kept] = field(default_factory=list)  # the documents as read (for the apply history)

    @property
    def errors(self) -> list[Diagnostic]:
        return [x for x in self.diagnostics if x.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [x for x in self.diagnostics if x.severity == "warning"]


class _Report:
    """Collects diagnostics; locations are resolved lazily from the document's node tree."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self.schema_failed = False  # a document broke the schema (it may still be checked, salvaged)

    def add(
        self,
        severity: Severity,
        where: tuple[Document, tuple[object, ...]],
        message: str,
        hint: str = "",
        code: DiagnosticCode = "invalid",
    ) -> None:
        doc, loc = where
        line, column = doc.locate(loc)
        self.items.append(
            Diagnostic(
                severity=severity,
                file=doc.source,
                line=line,
                column=column,
                path=format_path(loc),
                message=message,
                hint=hint,
                code=code,
            )
        )

    def error(
        self, where: tuple[Document, tuple[object, ...]], message: str, hint: str = "", code: DiagnosticCode = "invalid"
    ) -> None:
        self.add("error", where, message, hint, code)

    def warning(
        self, where: tuple[Document, tuple[object, ...]], message: str, hint: str = "", code: DiagnosticCode = "warning"
    ) -> None:
        self.add("warning", where, message, hint, code)


def validate(
    documents: list[Document], *, fleet: str | None = None, now: datetime | None = None, files: list[str] | None = None
) -> ValidationResult:
    """Run every check; build the desired state when there is no error."""
    report = _Report()
    for doc in documents:
        yaml11.give_hermes_meaning(doc)
    models = [(doc, m) for doc in documents if (m := _check_schema(doc, report)) is not None]
    gathered = _gather(models, report)
    # A schema error, or a document refused before its schema (not a mapping, another apiVersion or kind).
    schema_failed = report.schema_failed or len(models) < len(documents)
    fleet_name = _resolve_fleet(gathered, fleet, report, documents, quiet=schema_failed)
    if fleet_name is None and not documents and not report.items:
        report.items.append(
            Diagnostic(
                severity="error",
                file=(files or ["<input>"])[0],
                line=0,
                column=0,
                path="",
                message="no manifest documents were read from the input",
                hint="add a 'kind: Fleet' document, or pass --fleet NAME",
                code="fleet",
            )
        )
    checker = _Checks(gathered, report, now or datetime.now(UTC))
    checker.run()
    state = None
    if not any(x.severity == "error" for x in report.items) and fleet_name is not None:
        state = _build_state(gathered, fleet_name, report)
        if any(x.severity == "error" for x in report.items):  # _build_state found a conflict
            state = None
    diagnostics = sorted(report.items, key=lambda x: (x.file, x.line, x.column))
    files = files or sorted({doc.source for doc in documents})
    return ValidationResult(diagnostics, state, files, len(documents), [Kept.of(doc) for doc in documents])


# --- pass 1: envelope and schema ------------------------------------------------------------


def _check_schema(doc: Document, report: _Report) -> BaseModel | None:
    data = doc.data
    if not isinstance(data, dict):
        report.error(
            (doc, ()),
            f"a manifest document must be a mapping, not {_type_name(data)}",
            "start the document with 'apiVersion: hermes-fleet/v1' and 'kind: ...'",
            "envelope",
        )
        return None
    if data.get("apiVersion") != API_VERSION:
        got = data.get("apiVersion")
        report.error(
            (doc, ("apiVersion",)),
            "missing apiVersion" if got is None else f"unknown apiVersion {got!r}",
            f"set 'apiVersion: {API_VERSION}'",
            "envelope",
        )
        return None
    kind = data.get("kind")
    cls = DOCUMENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        guess = difflib.get_close_matches(str(kind), KINDS, n=1)
        hint = f"did you mean {guess[0]!r}?" if guess else f"use one of {', '.join(KINDS)}"
        report.error((doc, ("kind",)), "missing kind" if kind is None else f"unknown kind {kind!r}", hint, "envelope")
        return None
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        errors = _clean_errors(exc, data)
        for item in errors:
            loc, message, hint, code = _explain(item, cls, suggest=len(report.items) < MAX_SUGGESTIONS)
            report.error((doc, loc), message, hint, code)
        report.schema_failed = True
        return _salvage(cls, data, errors)


SALVAGE_ROUNDS = 3
_OBJECT_TYPES = ("model_type", "model_attributes_type", "dict_type")  # the value should have been a mapping


def _salvage(cls: type[BaseModel], data: dict[str, Any], errors: list[dict[str, Any]]) -> BaseModel | None:
    """The document without its schema errors' keys, when that is valid, so the later passes still
    report the document's other errors in the same run (names, references, config values).

    Only keys of mappings are left out (an unknown field, a value of the wrong type, or the list
    holding a wrong item), never a list item (the others' positions, hence their lines, would
    shift) and never a required field: then nothing is salvaged. The schema errors are reported
    already, so no desired state is built from the result.
    """
    kept: Any = _copy(data)
    for _ in range(SALVAGE_ROUNDS):
        for err in errors:
            if err["type"] == "missing" or not _drop(kept, err["loc"], object_item=err["type"] in _OBJECT_TYPES):
                return None
        try:
            return cls.model_validate(kept)
        except ValidationError as exc:
            errors = _clean_errors(exc, kept)
    return None


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _drop(data: Any, loc: tuple[object, ...], *, object_item: bool = False) -> bool:
    """Remove the deepest mapping key on `loc` whose value holds the error (through a list of plain
    values, as toolsets); False when there is none."""
    nodes = [data]
    for part in loc:
        node = nodes[-1]
        present = part in node if isinstance(node, dict) else isinstance(part, int) and 0 <= part < len(node)
        if not isinstance(node, dict | list) or not present:
            break
        nodes.append(node[part])  # type: ignore[call-overload]
    for depth in range(min(len(loc), len(nodes) - 1) - 1, -1, -1):
        parent, part = nodes[depth], loc[depth]
        if isinstance(parent, dict) and depth > 0:  # never an envelope key (apiVersion, kind, metadata, spec)
            del parent[part]
            return True
        if isinstance(parent, list) and (object_item or any(isinstance(item, dict | list) for item in parent)):
            return False  # a list of objects (bots, routines): leaving it out would hide them all
    return False


def _clean_errors(exc: ValidationError, data: Any) -> list[dict[str, Any]]:
    """Drop pydantic's union-member tags from locations and keep one error per field path."""
    seen: set[tuple[object, ...]] = set()
    out: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False):
        loc: list[object] = []
        node = data
        for part in err["loc"]:
            in_dict = isinstance(node, dict) and part in node
            if in_dict or (isinstance(node, list) and isinstance(part, int) and part < len(node)):
                loc.append(part)
                node = node[part]
            elif isinstance(part, str) and _UNION_TAGS.match(part):
                continue
            else:
                loc.append(part)
                node = None
        key = tuple(loc)
        if key in seen:
            continue
        seen.add(key)
        out.append({**err, "loc": key, "value": node})
    # A value that is a mapping failed both as a reference (errors inside it) and as a scalar
    # (one type error on it): the scalar member's complaint is noise.
    deeper = {e["loc"][:n] for e in out for n in range(len(e["loc"]))}
    return [e for e in out if not (e["loc"] in deeper and e["type"].endswith(("_type", "_parsing")))]


def _explain(
    err: dict[str, Any], cls: type[BaseModel], *, suggest: bool = True
) -> tuple[tuple[object, ...], str, str, DiagnosticCode]:
    loc = err["loc"]
    kind = err["type"]
    field_name = str(loc[-1]) if loc else ""
    if kind == "extra_forbidden" and (retired := effects.retired_field(loc)) is not None:
        return loc, retired[0], retired[1], "no_reader"
    if kind == "extra_forbidden":
        allowed = _fields_at(cls, loc[:-1])
        # "did you mean" is a fuzzy match per key; past MAX_SUGGESTIONS findings (more than are shown)
        # it would make a file with 100,000 unknown keys take seconds, so only the field list is given.
        guess = difflib.get_close_matches(field_name, allowed, n=1, cutoff=0.6) if allowed and suggest else []
        hint = (
            f"did you mean {guess[0]!r}?"
            if guess
            else (f"allowed fields here: {', '.join(sorted(allowed))} ({doc_section(cls, loc[:-1])})" if allowed else "remove it")
        )
        return loc, f"unknown field {field_name!r}", hint, "unknown_field"
    if kind == "missing":
        return loc, f"required field {field_name!r} is missing", f"add '{field_name}:'", "missing_field"
    message = _manifest_terms(err["msg"])
    if message.startswith(("Value error, ", "Assertion failed, ")):
        message = message.split(", ", 1)[1]
    hint = ""
    if kind.endswith("_type") or kind in ("model_type", "dict_type", "list_type"):
        message = f"{message[0].lower()}{message[1:]}, got {_type_name(err.get('input'))}"
        hint = f"see {doc_section(cls, loc)}"
    elif kind == "string_pattern_mismatch":
        message = f"{_short(err.get('input'))} is not allowed here ({message[0].lower()}{message[1:]})"
    return loc, message[0].lower() + message[1:] if message else message, hint, "invalid_value"


# pydantic's words for YAML's shapes, and its class names, in manifest terms.
_TERMS = (
    (re.compile(r" or instance of \w+"), ""),
    (re.compile(r"\bvalid dictionary\b"), "mapping (key: value lines)"),
    (re.compile(r"\bvalid list\b"), "list (lines starting with '- ')"),
    (re.compile(r"\bDictionary\b"), "Mapping"),
)
DOCS = "docs/manifest.md"
# The section of docs/manifest.md that explains a field, by the field's own name (the Bot's
# sub-sections) or by the model it belongs to.
_FIELD_SECTIONS = {
    "model": "model",
    "skills": "skills",
    "mcp_servers": "mcp_servers",
    "tts": "tts",
    "checkpoints": "checkpoints",
    "avatar": "avatar",
    "env": "env",
    "config": "config-passthrough",
    "routines": "routine",
    "rooms": "room",
    "peers": "peer",
    "sections": "section",
    "notifications": "notifications",
    "gateway": "gateway",
    "schedule": "schedule-grammar",
}
_MODEL_SECTIONS = {
    "ModelPin": "model",
    "Skills": "skills",
    "McpServer": "mcp_servers",
    "McpTools": "mcp_servers",
    "Tts": "tts",
    "Checkpoints": "checkpoints",
    "Avatar": "avatar",
    "SecretRef": "secrets",
    "Routine": "routine",
    "RoutineSpec": "routine",
    "RoutineDocSpec": "routine",
    "Bot": "bot",
    "BotSpec": "bot",
    "BotDefaults": "how-defaults-merge",
    "Section": "section",
    "SectionSpec": "section",
    "Room": "room",
    "RoomSpec": "room",
    "Peer": "peer",
    "PeerSpec": "peer",
    "PeerAccept": "peer",
    "Gateway": "gateway",
    "BotLoopGuard": "gateway",
    "GroupRouter": "gateway",
    "Webhook": "notifications",
    "PolicySpec": "fleet-and-policy",
    "FleetSpec": "fleet-and-policy",
}


def _manifest_terms(message: str) -> str:
    for pattern, words in _TERMS:
        message = pattern.sub(words, message)
    return message


def doc_section(cls: type[BaseModel], loc: tuple[object, ...]) -> str:
    """Where docs/manifest.md explains the field at `loc` of a document of class `cls`."""
    for part in reversed(loc):
        if isinstance(part, str) and part in _FIELD_SECTIONS:
            return f"{DOCS}#{_FIELD_SECTIONS[part]}"
    for n in range(len(loc), -1, -1):
        model = _model_at(cls, loc[:n])
        if model is not None and model.__name__ in _MODEL_SECTIONS:
            return f"{DOCS}#{_MODEL_SECTIONS[model.__name__]}"
    return f"{DOCS}#documents"


def _model_at(cls: type[BaseModel], loc: tuple[object, ...]) -> type[BaseModel] | None:
    current: Any = cls
    for part in loc:
        current = _descend(current, part)
        if current is None:
            return None
    return _model_in(current)


@functools.lru_cache(maxsize=256)
def _fields_at(cls: type[BaseModel], loc: tuple[object, ...]) -> tuple[str, ...]:
    """The field names allowed at `loc` inside `cls` (for "did you mean")."""
    current: Any = cls
    for part in loc:
        current = _descend(current, part)
        if current is None:
            return ()
    model = _model_in(current)
    return tuple(model.model_fields) if model else ()


def _descend(annotation: Any, part: object) -> Any:
    model = _model_in(annotation)
    if model is not None and isinstance(part, str):
        info = model.model_fields.get(part)
        return info.annotation if info else None
    for arg in _args(annotation):
        origin = typing.get_origin(arg)
        if origin is list and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(arg)[1]
    return None


def _args(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return [a for x in typing.get_args(annotation) for a in _args(x)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    for arg in _args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _type_name(value: Any) -> str:
    if isinstance(value, str):
        return "a string"  # a YAML 1.1 word (loading.Yaml11Word) too
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "true/false",
        type(None): "nothing (null)",
    }.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- pass 2: gathering ----------------------------------------------------------------------


def _gather(models: list[tuple[Document, Any]], report: _Report) -> Gathered:
    g = Gathered()
    for doc, model in models:
        meta_fleet = getattr(model.metadata, "fleet", None)
        if isinstance(model, FleetDocument):
            name = model.metadata.name
            if name in g.fleet_names:
                first = g.fleet_names[name]
                report.error(
                    (doc, ("metadata", "name")),
                    f"fleet {name!r} is declared twice (first at {first.doc.source}:{first.doc.locate(('metadata', 'name'))[0]})",
                    "keep one Fleet document per fleet",
                    "duplicate",
                )
            g.fleet_names[name] = Declared(model, doc, ())
            spec = model.spec
            if any(getattr(spec, f) is not None for f in PolicySpec.model_fields):
                g.policies.append(Declared(spec, doc, ("spec",)))
            for i, section in enumerate(spec.sections or []):
                g.sections.append(Declared(section, doc, ("spec", "sections", i)))
            for i, bot in enumerate(spec.bots or []):
                g.bots.append(Declared(bot, doc, ("spec", "bots", i)))
                for j, r in enumerate(bot.routines or []):
                    g.routines.append((bot.name, Declared(r, doc, ("spec", "bots", i, "routines", j))))
            for i, room in enumerate(spec.rooms or []):
                g.rooms.append(Declared(room, doc, ("spec", "rooms", i)))
            for i, peer in enumerate(spec.peers or []):
                g.peers.append(Declared(peer, doc, ("spec", "peers", i)))
            continue
        if meta_fleet:
            g.explicit_fleets.append((meta_fleet, Declared(model, doc, ("metadata", "fleet"))))
        _gather_single(model, doc, g, report)
    return g


_META_NAME = ("metadata", "name")


def _gather_single(model: BaseModel, doc: Document, g: Gathered, report: _Report) -> None:
    try:
        _gather_object(model, doc, g)
    except ValidationError as exc:  # metadata.name breaks the kind's own name rule
        for err in exc.errors(include_url=False):
            if tuple(err["loc"])[:1] == ("name",):
                msg = err["msg"].split(", ", 1)[-1] if err["msg"].startswith("Value error") else err["msg"]
                report.error((doc, ("metadata", "name")), f"invalid name: {msg[0].lower()}{msg[1:]}", code="invalid_value")


def _gather_object(model: BaseModel, doc: Document, g: Gathered) -> None:
    name = model.metadata.name  # type: ignore[attr-defined]
    spec = model.spec  # type: ignore[attr-defined]
    # The spec is validated already: hand its values (nested models as they are) to the full
    # model, which then checks only what it adds (the name). Dumping and re-validating the whole
    # spec doubled the cost of the many-documents form.
    if isinstance(model, BotDocument):
        bot = _bot_of(spec, name)
        g.bots.append(Declared(bot, doc, ("spec",), _META_NAME))
        for j, r in enumerate(bot.routines or []):
            g.routines.append((name, Declared(r, doc, ("spec", "routines", j))))
        return
    if isinstance(model, RoutineDocument) and (routine := _routine_of(spec, name)) is not None:
        g.routines.append((spec.bot, Declared(routine, doc, ("spec",), _META_NAME)))
        return
    fields = {key: getattr(spec, key) for key in spec.model_fields_set}
    if isinstance(model, SectionDocument):
        g.sections.append(Declared(Section.model_validate({**fields, "name": name}), doc, ("spec",), _META_NAME))
    elif isinstance(model, RoomDocument):
        g.rooms.append(Declared(Room.model_validate({**fields, "name": name}), doc, ("spec",), _META_NAME))
    elif isinstance(model, PeerDocument):
        g.peers.append(Declared(Peer.model_validate({**fields, "name": name}), doc, ("spec",), _META_NAME))
    elif isinstance(model, RoutineDocument):
        bot_name = fields.pop("bot")
        g.routines.append((bot_name, Declared(Routine.model_validate({**fields, "name": name}), doc, ("spec",), _META_NAME)))
    elif isinstance(model, PolicyDocument):
        g.policies.append(Declared(model.spec, doc, ("spec",)))


def _bot_of(spec: BotSpec, name: str) -> Bot:
    """The Bot of a Bot document: its validated spec plus its name, as `Bot.model_validate` of the
    two would make it (tests/unit/test_validation_speed.py). Bot adds only the name to BotSpec,
    with the rule Metadata.name has already checked (non-empty), so there is nothing left to
    validate: a validation pass per bot was a third of the many-documents form's gathering."""
    return assemble(Bot, {**spec.__dict__, "name": name}, spec.model_fields_set | {"name"})


_ROUTINE_NAME = TypeAdapter(Annotated[str, *Routine.model_fields["name"].metadata])


def _routine_of(spec: RoutineDocSpec, name: str) -> Routine | None:
    """The Routine of a Routine document, as `Routine.model_validate` of its spec (less `bot`) and
    name would make it, when the name passes Routine's own name rule (None when it does not: the
    caller then validates the plain way, for the error). Routine adds only the name to
    RoutineSpec, whose rules the document's spec has passed already."""
    try:
        _ROUTINE_NAME.validate_python(name)
    except ValidationError:
        return None
    values = {key: value for key, value in spec.__dict__.items() if key != "bot"}
    values["name"] = name
    return assemble(Routine, values, (spec.model_fields_set - {"bot"}) | {"name"})


def _resolve_fleet(
    g: Gathered, explicit: str | None, report: _Report, documents: list[Document], *, quiet: bool = False
) -> str | None:
    names = set(g.fleet_names) | {n for n, _ in g.explicit_fleets}
    if explicit is not None:  # an empty --fleet is a bad name too, not "no name"
        if naming.PROFILE_NAME.match(explicit) is None:
            report.items.append(
                Diagnostic(
                    severity="error",
                    file="<command line>",
                    line=0,
                    column=0,
                    path="--fleet",
                    message=f"invalid fleet name {explicit!r}",
                    hint="use ^[a-z0-9][a-z0-9_-]{0,63}$",
                    code="fleet",
                )
            )
            return None
        names.add(explicit)
    if len(names) > 1:
        for name, declared in g.explicit_fleets:
            report.error(
                declared.at(),
                f"this object belongs to fleet {name!r}, but the manifests name {len(names)} fleets ({', '.join(sorted(names))})",
                "apply one fleet at a time: every document in one run must name the same fleet",
                "fleet",
            )
        if not g.explicit_fleets:
            report.error(
                (documents[0], ("metadata", "name")),
                f"the manifests name {len(names)} fleets ({', '.join(sorted(names))})",
                "apply one fleet at a time",
                "fleet",
            )
        return None
    if not names:
        if documents and not quiet:
            report.error(
                (documents[0], ("metadata",)),
                "no fleet name: the ownership scope is unknown",
                "add a 'kind: Fleet' document, set metadata.fleet on each document, or pass --fleet NAME",
                "fleet",
            )
        return None
    return names.pop()


# --- pass 3: semantic checks ----------------------------------------------------------------


class _Checks:
    def __init__(self, g: Gathered, report: _Report, now: datetime) -> None:
        self.g = g
        self.report = report
        self.now = now
        self.bot_names = {x.obj.name for x in g.bots}
        self.bot_hosts = {x.obj.name: x.obj.host for x in g.bots}
        self.bots: dict[str, Bot] = {x.obj.name: x.obj for x in g.bots}
        self.peer_names = {x.obj.name for x in g.peers}
        self.section_names = {x.obj.name for x in g.sections}
        self.effects = effects.Effects()
        self.defaults: BotDefaults | None = g.policies[0].obj.defaults if g.policies else None

    def run(self) -> None:
        self.check_unique(self.g.bots, "bot")
        self.check_unique(self.g.sections, "section")
        self.check_unique(self.g.rooms, "room")
        self.check_unique(self.g.peers, "peer")
        self.check_policies()
        for bot in self.g.bots:
            self.check_bot(bot)
        self.check_renames()
        self.check_routines()
        self.check_mentions()
        for room in self.g.rooms:
            self.check_room(room)
        for peer in self.g.peers:
            self.check_peer(peer)
        self.effects.finish(self.report)

    def check_unique(self, items: list[Declared], what: str) -> None:
        first: dict[str, Declared] = {}
        for item in items:
            name = item.obj.name
            if name in first:
                other = first[name]
                line = other.doc.locate(other.at("name")[1])[0]
                self.report.error(
                    item.at("name"),
                    f"{what} {name!r} is declared twice (first at {other.doc.source}:{line})",
                    f"rename or remove one; {what} names are unique across all files",
                    "duplicate",
                )
            else:
                first[name] = item

    def check_policies(self) -> None:
        if len(self.g.policies) > 1:
            for extra in self.g.policies[1:]:
                self.report.error(
                    extra.at(),
                    "more than one Policy (or Fleet spec) sets install-wide settings",
                    "merge them into one",
                    "duplicate",
                )
        for pol in self.g.policies:
            spec: PolicySpec = pol.obj
            self.check_config(pol, spec.config, INSTALL_COVERED, install=True)
            hermes_names.check_install_config(self.report, pol, spec.config, INSTALL_COVERED)
            if spec.defaults is not None:
                self.check_settings(pol, spec.defaults, ("defaults",))

    def check_bot(self, item: Declared) -> None:
        bot: Bot = item.obj
        problem = naming.profile_name_problem(bot.name)
        if problem:
            self.report.error(item.at("name"), f"{bot.name!r} is not a valid profile name: {problem}", code="name")
        elif bot.name in naming.RESERVED_PROFILE_NAMES and bot.name != DEFAULT_PROFILE:
            self.report.error(
                item.at("name"),
                f"{bot.name!r} is reserved by Hermes and cannot be a profile",
                "choose another name",
                "reserved_name",
            )
        if bot.name == DEFAULT_PROFILE and (bot.clone_from or bot.create_empty):
            self.report.error(
                item.at("clone_from" if bot.clone_from else "create_empty"),
                "the default profile is the Hermes root and is never created",
                "remove clone_from / create_empty from the default bot",
                "default_profile",
            )
        if bot.clone_from is not None:
            self.check_clone_from(item, bot)
        if bot.section is not None and bot.section not in self.section_names:
            self.report.error(
                item.at("section"),
                f"section {bot.section!r} is not declared",
                self._suggest(bot.section, self.section_names, "add it under sections:"),
                "reference",
            )
        self.check_settings(item, bot, ())
        if bot.display_name is not None and bot.display_name != bot.display_name.strip():
            self.report.error(
                item.at("display_name"),
                f"display_name {bot.display_name!r} has spaces around it, which Hermes strips",
                "remove them (else every plan would show the stripped name as a change)",
                "invalid_value",
            )
        if bot.soul_file is not None:
            self.check_file(item.at("soul_file"), item.base_dir, bot.soul_file, MAX_SOUL_BYTES, text=True)
        if bot.avatar is not None and bot.avatar.image is not None:
            self.check_file(item.at("avatar", "image"), item.base_dir, bot.avatar.image, MAX_IMAGE_BYTES, image=True)

    def check_renames(self) -> None:
        """`renamed_from` on a bot: what the manifests alone can refuse (the home's side, a source that
        is not this fleet's bot or a target that exists, is refused by plan and apply as rename-refused)."""
        renames = {x.obj.name: x.obj.renamed_from for x in self.g.bots if x.obj.renamed_from is not None}
        claimed: dict[str, Declared] = {}
        for item in self.g.bots:
            bot: Bot = item.obj
            old = bot.renamed_from
            if old is None:
                continue
            where = item.at("renamed_from")
            problem = naming.profile_name_problem(old)
            if problem:
                self.report.error(where, f"renamed_from {old!r} is not a valid profile name: {problem}", code="name")
            elif DEFAULT_PROFILE in (old, bot.name):
                self.report.error(
                    where,
                    "the default profile is the Hermes root: it is never renamed, and no bot is renamed into it",
                    "remove renamed_from (Hermes itself refuses `hermes profile rename` of or to 'default')",
                    "default_profile",
                )
            elif old == bot.name:
                self.report.error(where, f"bot {bot.name!r} is renamed from itself", "remove renamed_from", "reference")
            elif old in renames:
                self.report.error(
                    where,
                    f"renamed_from {old!r} names a bot that is itself renamed (from {renames[old]!r}): "
                    "a chain of renames is not applied in one step",
                    f"rename {renames[old]!r} to {old!r} first and apply, then rename {old!r} to {bot.name!r}",
                    "rename_chain",
                )
            elif old in self.bot_names:
                self.report.error(
                    where,
                    f"renamed_from {old!r} names a bot that is still declared",
                    f"remove bot {old!r} from the manifests, or drop renamed_from",
                    "reference",
                )
            if old in claimed:
                other = claimed[old]
                line = other.doc.locate(other.at("renamed_from")[1])[0]
                self.report.error(
                    where,
                    f"bots {other.obj.name!r} and {bot.name!r} are both renamed from {old!r} "
                    f"(the other at {other.doc.source}:{line}); one profile becomes one bot",
                    "keep renamed_from on one of them",
                    "duplicate",
                )
            else:
                claimed[old] = item

    def check_clone_from(self, item: Declared, bot: Bot) -> None:
        assert bot.clone_from is not None
        problem = naming.profile_name_problem(bot.clone_from)
        if problem:
            self.report.error(item.at("clone_from"), f"{bot.clone_from!r} is not a valid profile name: {problem}", code="name")
        elif bot.clone_from == bot.name:
            self.report.error(item.at("clone_from"), "a bot cannot be cloned from itself", "name another profile", "reference")

    def check_settings(self, item: Declared, settings: Bot | BotDefaults, prefix: tuple[object, ...]) -> None:
        for key, value in (settings.env or {}).items():
            if key in ENV_NAME_DENYLIST:  # refused at write time too: refuse before anything is written
                self.report.error(
                    item.at(*prefix, "env", key),
                    f"{key} may not be set in a Hermes .env "
                    "(Hermes refuses it too: it steers the loader, shell or Hermes itself)",
                    "remove it from env",
                    "invalid_value",
                )
            elif _is_secret_key(key) and not isinstance(value, SecretRef):
                self.report.error(
                    item.at(*prefix, "env", key),
                    f"{key} looks like a secret but has a literal value",
                    f"write '{key}: {{from_env: {key}}}' (or from_file, from_command) and keep the value out of git",
                    "secret_literal",
                )
            elif isinstance(value, SecretRef):
                if value.from_file is not None:
                    self.check_from_file(item.at(*prefix, "env", key, "from_file"), item.secret_dir, value)
            else:
                self.check_env_literal(item.at(*prefix, "env", key), key, value)
        for name, server in (settings.mcp_servers or {}).items():
            if server.url is not None:
                self.check_url_credentials(
                    item.at(*prefix, "mcp_servers", name, "url"), server.url, "use headers: with a secret reference"
                )
            for block in ("env", "headers"):
                for key, value in (getattr(server, block) or {}).items():
                    if isinstance(value, SecretRef):
                        where = item.at(*prefix, "mcp_servers", name, block, key, "from_file")
                        self.check_from_file(where, item.secret_dir, value)
                    if _is_secret_key(key) and not isinstance(value, SecretRef):
                        self.report.error(
                            item.at(*prefix, "mcp_servers", name, block, key),
                            f"{key} looks like a secret but has a literal value",
                            "use {from_env: NAME}, {from_file: PATH} or {from_command: [argv...]}",
                            "secret_literal",
                        )
        if settings.tts is not None:
            for provider in TTS_PROVIDER_FIELDS:
                block = getattr(settings.tts, provider)
                for dotted, leaf in d.flatten(block or {}).items():
                    if _is_secret_key(dotted.rsplit(".", 1)[-1]) and leaf not in (None, ""):
                        self.report.error(
                            item.at(*prefix, "tts", provider, dotted.split(".")[0]),
                            f"tts.{provider}.{dotted} looks like a secret but has a literal value",
                            "put the key in env: as a reference (Hermes reads provider keys from .env)",
                            "secret_literal",
                        )
        self.check_config(item, settings.config, BOT_COVERED, install=False, prefix=prefix)
        self.effects.check_settings(item.at, prefix, settings, self.report)
        defaults = None if settings is self.defaults else self.defaults
        hermes_names.check_settings(self.report, item, settings=settings, prefix=prefix, defaults=defaults, covered=BOT_COVERED)

    def check_env_literal(self, where: tuple[Document, tuple[object, ...]], key: str, value: object) -> None:
        """A literal .env value: the same checks the .env writer makes (validate predicts apply)."""
        text = d.env_literal(value) or ""  # what env_entries writes for a literal
        if len(text.encode("utf-8")) > MAX_ENV_VALUE_BYTES:
            self.report.error(
                where,
                f"the value of {key} is {len(text.encode('utf-8')):,} bytes, over the {MAX_ENV_VALUE_BYTES:,}-byte limit",
                "a .env value is one environment variable; keep it short (or put the content in a file)",
                "invalid_value",
            )
            return
        problem = env_value_problem(key, text)
        if problem is not None:
            self.report.error(where, problem, "change the value: Hermes' .env cannot carry it unchanged", "invalid_value")

    def check_from_file(self, where: tuple[Document, tuple[object, ...]], base: Path, ref: SecretRef) -> None:
        """A relative from_file stays in the manifest's folder (checked on the path: the file itself
        is read only by apply, on the machine that applies)."""
        raw = ref.from_file
        if raw is None or Path(raw).is_absolute():
            return
        real = os.path.realpath(base / raw)  # resolves a symlink on the way; reads nothing
        if os.path.normpath(raw).split(os.sep)[0] == os.pardir or not Path(real).is_relative_to(os.path.realpath(base)):
            self.report.error(
                where,
                f"{raw!r} leads out of the manifest's folder ({base})",
                "keep the secret file in that folder or below it, or give an absolute path (e.g. /run/secrets/NAME)",
                "file_outside",
            )

    def check_url_credentials(self, where: tuple[Document, tuple[object, ...]], url: str, fix: str) -> None:
        """A URL may not carry a credential: it would be written in config.yaml and shown in every plan."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return  # the URL rules report it
        secret_query = [
            name
            for name, _, value in (p.partition("=") for p in parts.query.split("&") if p)
            if value and naming.is_secret_key(name)
        ]
        if "@" in parts.netloc or secret_query:
            what = "a user name or password" if "@" in parts.netloc else f"the query parameter {secret_query[0]!r}"
            self.report.error(where, f"the URL carries a credential ({what})", fix, "secret_literal")

    def check_config(
        self,
        item: Declared,
        config: dict[str, Any] | None,
        covered: tuple[str, ...],
        *,
        install: bool,
        prefix: tuple[object, ...] = (),
    ) -> None:
        for top, value in (config or {}).items():
            for dotted, leaf in d.flatten({top: value}).items():
                where = item.at(*prefix, "config", top)
                if "" in dotted.split("."):
                    self.report.error(where, f"config key {dotted!r} has an empty segment", "remove the stray '.'", "config_key")
                    continue
                hit = _covered_by(dotted, covered)
                if hit is not None:
                    field = _typed_field(hit, install)
                    self.report.error(
                        where,
                        f"config key {dotted!r} is set by the typed field {field!r}",
                        f"use '{field}:' instead of the passthrough",
                        "config_covered",
                    )
                elif (
                    _is_secret_key(dotted.rsplit(".", 1)[-1])
                    and leaf not in (None, "")
                    and not (isinstance(leaf, str) and leaf.startswith("${"))
                ):
                    self.report.error(
                        where,
                        f"config key {dotted!r} looks like a secret but has a literal value",
                        "put the secret in env: as a reference and write '${NAME}' here",
                        "secret_literal",
                    )

    def check_file(
        self,
        where: tuple[Document, tuple[object, ...]],
        base: Path,
        rel: str,
        limit: int,
        *,
        text: bool = False,
        image: bool = False,
    ) -> None:
        try:
            resolved = (base / rel).resolve()
            root = base.resolve()
        except OSError as exc:
            self.report.error(where, f"cannot resolve {rel!r}: {exc}", code="file")
            return
        if Path(rel).is_absolute() or not resolved.is_relative_to(root):
            self.report.error(
                where,
                f"{rel!r} points outside the manifest's folder ({root})",
                "keep referenced files next to the manifest, in its folder or below",
                "file_outside",
            )
            return
        if not resolved.exists():
            self.report.error(
                where,
                f"file {rel!r} does not exist (looked in {root})",
                "check the path; it is relative to the manifest's folder",
                "file_missing",
            )
            return
        try:
            data = bounded.read_bytes(resolved, limit)  # regular and small enough, checked before reading
        except TooLarge as exc:
            self.report.error(where, f"{rel!r} is {exc.size:,} bytes, over the {limit:,}-byte limit", code="file_too_large")
            return
        except NotRegular as exc:  # a folder, a FIFO, a device: never read
            self.report.error(where, f"{rel!r} is {exc.kind}, not a regular file", "name a regular file", "file_missing")
            return
        except OSError as exc:
            self.report.error(where, f"cannot read {rel!r}: {exc.strerror}", "check its permissions", "file")
            return
        if text:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                self.report.error(where, f"{rel!r} is not UTF-8 text", "save it as UTF-8", "file_encoding")
        if image and image_extension(data[:16]) is None:
            self.report.error(where, f"{rel!r} is not a PNG, JPEG or WebP image", "convert it to PNG", "file_type")

    def check_routines(self) -> None:
        per_bot: dict[str, dict[str, Declared]] = defaultdict(dict)
        for bot_name, item in self.g.routines:
            routine: Routine = item.obj
            if bot_name not in self.bot_names:
                self.report.error(
                    item.at("bot"),
                    f"routine {routine.name!r} names bot {bot_name!r}, which is not declared",
                    self._suggest(bot_name, self.bot_names, "declare the bot"),
                    "reference",
                )
            seen = per_bot[bot_name]
            if routine.name in seen:
                self.report.error(
                    item.at("name"),
                    f"bot {bot_name!r} has two routines named {routine.name!r}",
                    "routine names are unique per bot",
                    "duplicate",
                )
            seen[routine.name] = item
            self.check_schedule(item, routine)
            self.check_routine_prompt(item, routine)
            self.check_routine_base_url(item, routine)
            self.check_routine_context(item, routine)
            hermes_names.check_routine(self.report, item, routine, self.bots.get(bot_name), self.defaults)
            if routine.workdir is not None and not Path(routine.workdir).is_absolute():
                self.report.error(
                    item.at("workdir"),
                    f"workdir {routine.workdir!r} is not an absolute path (Hermes runs cron jobs detached from any folder)",
                    "write the full path, e.g. /srv/acme; it must exist on the machine that applies",
                    "invalid_value",
                )
        for bot_name, routines in per_bot.items():
            for item in routines.values():
                old = item.obj.renamed_from
                if old is not None and old in routines:
                    self.report.error(
                        item.at("renamed_from"),
                        f"renamed_from {old!r} names a routine of bot {bot_name!r} that still exists",
                        "drop renamed_from, or remove the old routine",
                        "reference",
                    )

    def check_routine_prompt(self, item: Declared, routine: Routine) -> None:
        """An instruction the Desktop would take for its own delegation text (docs/routines.md#what-a-routine-becomes)."""
        opening = cronjobs.delegation_opening(routine.prompt or "")
        if opening:
            self.report.error(
                item.at("prompt"),
                f"the prompt begins with {opening!r}, the opening of Bot Mode's delegation text: the Desktop "
                "auto-pauses such a job and the next apply would resume it, forever",
                "reword the first sentence of the instruction (e.g. start with the task itself)",
                "invalid_value",
            )

    def check_routine_base_url(self, item: Declared, routine: Routine) -> None:
        """Hermes' cron credential guard refuses every run of this pair (docs/hermes/cron.md#credential-guard)."""
        reason = cronjobs.base_url_refusal(routine.provider, routine.base_url)
        if reason:
            self.report.error(
                item.at("base_url"),
                f"Hermes blocks every run of this routine: {reason}",
                "set provider: custom for an endpoint of your own, or drop base_url to use the provider's own endpoint",
                "invalid_value",
            )

    def check_routine_context(self, item: Declared, routine: Routine) -> None:
        """`context_from` entries Hermes reads: `self` (written as the job's own id) or a job id."""
        for k, source in enumerate(routine.context_from or []):
            if source != cronjobs.SELF and not cronjobs.is_job_id(source):
                self.report.warning(
                    item.at("context_from", k),
                    f"{source!r} is not a cron job id; Hermes skips it (0.19.0 reads job ids only: 12 hex digits)",
                    "use 'self' for this routine's own previous output, or the id `hermes cron list` shows",
                    "inert_value",
                )

    def check_schedule(self, item: Declared, routine: Routine) -> None:
        try:
            parsed = _parse_schedule(routine.schedule)
        except ScheduleError as exc:
            self.report.error(item.at("schedule"), str(exc), "", "schedule")
            return
        hourly = MIN_ROUTINE_GAP_MINUTES <= 60 and schedules.at_most_hourly(parsed)  # no croniter work
        gap = None if hourly else _gap(parsed, self.now.replace(second=0, microsecond=0, minute=0))
        if gap is not None and gap < MIN_ROUTINE_GAP_MINUTES:
            runs = ", ".join(t.strftime("%Y-%m-%d %H:%M") for t in schedules.next_runs(parsed, 3, now=self.now))
            self.report.warning(
                item.at("schedule"),
                f"{routine.schedule!r} runs every {gap:g} minute(s) (next: {runs} UTC); every run is a model call",
                f"use a gap of at least {MIN_ROUTINE_GAP_MINUTES} minutes",
                "frequent_schedule",
            )
        if parsed.kind == "once" and parsed.run_at is not None and parsed.run_at <= self.now:
            self.report.warning(
                item.at("schedule"),
                f"the one-shot time {routine.schedule!r} is in the past",
                "Hermes refuses one-shots more than 120 s in the past; set a future time or remove it",
                "past_one_shot",
            )

    def check_mentions(self) -> None:
        # Every @-tag a bot answers to in the Desktop: its name, and its title's and display_name's
        # forms; a tag two bots share reaches neither (docs/hermes/bot-mode.md#mentions).
        owners: dict[str, list[tuple[Declared, str]]] = defaultdict(list)
        for item in self.g.bots:
            bot: Bot = item.obj
            for tag, source in naming.bot_tags(bot.name, bot.title, bot.display_name).items():
                owners[tag].append((item, source))
        for tag, holders in owners.items():
            for item, source in holders:
                others = [(o, f) for o, f in holders if o is not item]
                if source == "name" or not others:
                    continue  # a name is reported on the title or display_name that takes it
                value = getattr(item.obj, source)
                self.report.error(
                    item.at(source),
                    f"{source} {value!r} gives the tag @{tag}, which is also "
                    f"{'; '.join(self._tag_owner(o, f) for o, f in others)}; the Desktop resolves a tag two bots "
                    "share to nobody",
                    f"choose a {source} whose tags no other bot uses",
                    "mention_collision",
                )

    def _tag_owner(self, item: Declared, source: str) -> str:
        doc, loc = item.at(source)
        what = "the name" if source == "name" else f"the {source} tag"
        return f"{what} of bot {item.obj.name!r} ({doc.source}:{doc.locate(loc)[0]})"

    def check_room(self, item: Declared) -> None:
        room: Room = item.obj
        for attr in ("name", "renamed_from"):
            value = getattr(room, attr)
            if value is not None and value != value.strip():
                self.report.error(
                    item.at(attr),
                    f"room {attr.replace('_', ' ')} {value!r} begins or ends with whitespace; the gateway strips it, "
                    "so the live name would never match",
                    "remove the surrounding whitespace",
                    "name",
                )
        remote = [m for m in room.members if "/" in m]
        if remote and room.who_answers != "everyone":
            self.report.error(
                item.at("who_answers"),
                f"who_answers {room.who_answers!r} cannot be set in a room with members on other machines "
                f"({', '.join(remote)}): the gateway keeps such a room's policy at 'everyone' and refuses to change it",
                "use who_answers: everyone, or seat the remote bot in a room of its own",
                "remote_policy",
            )
        count = len(room.members)
        if not 2 <= count <= 6:
            self.report.error(
                item.at("members"), f"a room has 2-6 members, this one has {count}", "add or remove members", "room_members"
            )
        seen: set[str] = set()
        for i, member in enumerate(room.members):
            if member in seen:
                self.report.error(item.at("members", i), f"{member!r} is listed twice", "list each member once", "room_members")
            seen.add(member)
            self.check_member(item.at("members", i), member)
        self.check_room_hosts(item, room)
        if room.who_answers.startswith("lead:"):
            lead = room.who_answers.split(":", 1)[1]
            if lead not in room.members:
                self.report.error(
                    item.at("who_answers"),
                    f"the lead {lead!r} is not a member of room {room.name!r}",
                    "name one of its members as lead",
                    "reference",
                )
        elif room.who_answers == "auto":
            self.report.warning(
                item.at("who_answers"),
                "the gateway has no automatic pick: 'auto' is applied as its mentions_only policy (a message that names "
                "no bot is answered by none; @-mentioned bots answer)",
                "say 'everyone' or 'lead:<bot>' if that is not what you want",
                "who_answers_auto",
            )
        if room.picture is not None:
            self.check_file(item.at("picture"), item.base_dir, room.picture, MAX_IMAGE_BYTES, image=True)

    def check_room_hosts(self, item: Declared, room: Room) -> None:
        """A room's gateway reaches its local members only; a bot on another host must be a peer member."""
        for i, member in enumerate(room.members):
            host = self.bot_hosts.get(member)
            if host is None or host == room.host:
                continue
            where = f"on host {room.host!r}" if room.host else "on every host (it names no host)"
            self.report.error(
                item.at("members", i),
                f"member {member!r} lives on host {host!r}, but room {room.name!r} is applied {where}",
                f"give the room 'host: {host}', or reach the bot through a peer: write "
                f"'<peer>/{member}' with a peer whose url is {host}'s gateway",
                "cross_host",
            )

    def check_member(self, where: tuple[Document, tuple[object, ...]], member: str) -> None:
        if "/" in member:
            peer, _, profile = member.partition("/")
            if peer not in self.peer_names:
                self.report.error(
                    where,
                    f"remote member {member!r} names peer {peer!r}, which is not declared",
                    "declare it under peers: with its url and key",
                    "reference",
                )
            elif naming.profile_name_problem(profile):
                self.report.error(where, f"{profile!r} is not a valid profile name", code="name")
            else:
                self.check_seat_peer(where, member, next(x.obj for x in self.g.peers if x.obj.name == peer))
        elif member not in self.bot_names:
            self.report.error(
                where,
                f"member {member!r} is not a bot of this fleet",
                self._suggest(member, self.bot_names, "declare it, or write peer/profile for a remote bot"),
                "reference",
            )

    def check_seat_peer(self, where: tuple[Document, tuple[object, ...]], member: str, peer: Peer) -> None:
        """Seating `peer/profile` asks that machine's API server for a grant with the peer's key."""
        if peer.key is None:
            self.report.error(
                where,
                f"remote member {member!r}: peer {peer.name!r} has no key, and seating the member needs it (the "
                "peer's API server issues the member's grant only to a caller with that profile's API key)",
                f"give peer {peer.name!r} a key: {{from_env: ...}}",
                "reference",
            )
        if not clear_text_allowed(peer.url):
            self.report.error(
                where,
                f"remote member {member!r}: peer {peer.name!r} is reached over plain http ({peer.url}); seating a member "
                "sends the peer's key and a grant to it, which RoomLink allows only over https (plain http only on loopback)",
                f"serve {peer.name!r}'s API server over https and write https:// in its url",
                "url",
            )

    def check_peer(self, item: Declared) -> None:
        peer: Peer = item.obj
        if naming.profile_name_problem(peer.name):
            self.report.error(
                item.at("name"),
                f"{peer.name!r} is not a valid peer name",
                "use ^[a-z0-9][a-z0-9_-]{0,63}$ (Hermes lower-cases peer names)",
                "name",
            )
        url = peer.url
        if not re.match(r"^https?://[^/\s:]+(:\d{1,5})?(/\S*)?\Z", url):
            self.report.error(
                item.at("url"),
                f"{url!r} is not an http:// or https:// URL with a host",
                "write it like http://spark.lan:8642",
                "url",
            )
        self.check_url_credentials(item.at("url"), url, "give the peer's credential as key: {from_env: NAME}")
        if peer.key is not None:
            self.check_from_file(item.at("key", "from_file"), item.secret_dir, peer.key)

        if peer.accept is not None:
            self.check_accept(item)

    def check_accept(self, item: Declared) -> None:
        """A peer accepted by a machine of this fleet: both sides come from this declaration."""
        peer: Peer = item.obj
        accept = peer.accept
        assert accept is not None
        if peer.key is None:
            self.report.error(
                item.at("key"),
                f"peer {peer.name!r} is accepted by {accept.host!r} but has no key",
                "give it a key (by reference): Hermes' API server refuses to start without API_SERVER_KEY",
                "peer_accept",
            )
        if peer.host is not None and peer.host == accept.host:
            self.report.error(
                item.at("accept", "host"),
                f"peer {peer.name!r} is registered on {peer.host!r} and accepted by it too: a machine is not its own peer",
                "set host: to the machine that sends, or leave it out (every machine but the accepting one)",
                "peer_accept",
            )
        if accept.port is None and d.url_port(peer.url) is None:
            self.report.error(
                item.at("accept", "port"),
                f"peer {peer.name!r}: its url {peer.url!r} names no port, so the API server's port is unknown",
                "give the port in the url (http://box.lan:8642) or as accept.port (behind a proxy)",
                "peer_accept",
            )
        others = [x for x in self.g.peers if x.obj.accept is not None and x.obj.accept.host == accept.host]
        if len(others) > 1 and others[0] is not item:
            self.report.error(
                item.at("accept", "host"),
                f"peers {others[0].obj.name!r} and {peer.name!r} are both accepted by {accept.host!r}, "
                "which has one API server and one key",
                "declare one peer per accepting machine; every other machine registers it",
                "peer_accept",
            )

    @staticmethod
    def _suggest(value: str, options: set[str], fallback: str) -> str:
        guess = difflib.get_close_matches(value, sorted(options), n=1)
        return f"did you mean {guess[0]!r}?" if guess else fallback


@functools.lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    return naming.is_secret_key(key)


@functools.lru_cache(maxsize=4096)
def _parse_schedule(text: str) -> schedules.Schedule:
    return schedules.parse(text)


@functools.lru_cache(maxsize=4096)
def _gap(parsed: schedules.Schedule, hour: datetime) -> float | None:
    return schedules.shortest_gap_minutes(parsed, now=hour)


@functools.lru_cache(maxsize=4096)
def _covered_by(dotted: str, covered: tuple[str, ...]) -> str | None:
    """The typed field (of `covered`) that sets config key `dotted`, if any."""
    return next((c for c in covered if dotted == c or dotted.startswith(c + ".")), None)


def _typed_field(covered: str, install: bool) -> str:
    if install:
        return {
            "gateway.bot_loop_guard": "gateway.bot_loop_guard",
            "agent.bot_mode_protocol": "gateway.bot_mode_protocol",
            "auxiliary.group_router": "gateway.group_router",
            "bot_peers": "peers",
        }.get(covered, covered)
    return "peers" if covered == "bot_peers" else covered


# --- building the desired state ---------------------------------------------------------------


def _build_state(g: Gathered, fleet: str, report: _Report) -> d.DesiredState:
    policy: PolicySpec = g.policies[0].obj if g.policies else PolicySpec()
    sections = {x.obj.name: x.obj for x in g.sections}
    routines: dict[str, list[Routine]] = defaultdict(list)
    for bot_name, item in g.routines:
        routines[bot_name].append(item.obj)
    bots: dict[str, d.DesiredBot] = {}
    for item in g.bots:
        bots[item.obj.name] = _desired_bot(item, fleet, policy.defaults, sections, routines[item.obj.name])
    install_config = _install_config(policy, [x.obj for x in g.peers])
    root_bot = bots.get(DEFAULT_PROFILE)
    if root_bot is not None:
        for key in sorted(set(root_bot.config) & set(install_config)):
            report.error(
                g.policies[0].at("config"),
                f"config key {key!r} is set both install-wide and by the default bot (both write the root config.yaml)",
                "set it in one place",
                "config_conflict",
            )
    install_env = {
        naming.peer_env_key(x.obj.name): d.EnvEntry(ref=x.obj.key, base_dir=str(x.secret_dir))
        for x in g.peers
        if x.obj.key is not None
    }
    webhooks: list[d.DesiredWebhook] = []
    for i, hook in enumerate(policy.notifications or []):
        if any(w.name == hook.name for w in webhooks):
            report.error(g.policies[0].at("notifications", i, "name"), f"two webhooks are named {hook.name!r}", "", "duplicate")
            continue
        base = str(g.policies[0].secret_dir)
        events = frozenset(hook.events) if hook.events is not None else None
        webhooks.append(d.DesiredWebhook(hook.name, d.EnvEntry(ref=hook.url, base_dir=base), hook.format, events, hook.timeout))
    state = d.DesiredState(
        fleet=fleet,
        bots=bots,
        sections=sections,
        rooms={x.obj.name: x.obj for x in g.rooms},
        peers={x.obj.name: x.obj for x in g.peers},
        install_config=install_config,
        install_env=install_env,
        notifications=tuple(webhooks),
    )
    return state  # its digest is computed on first read (DesiredState.digest)


def _desired_bot(
    item: Declared, fleet: str, defaults: BotDefaults | None, sections: dict[str, Section], routines: list[Routine]
) -> d.DesiredBot:
    bot = d.merged_with_defaults(item.obj, defaults)
    base = str(item.secret_dir)
    soul = bot.soul
    if bot.soul_file is not None:
        # Checked by check_file already; read bounded again, newlines as text mode reads them.
        raw = bounded.read_bytes(item.base_dir / bot.soul_file, MAX_SOUL_BYTES).decode("utf-8")
        soul = raw.replace("\r\n", "\n").replace("\r", "\n")
    section = None
    if bot.section is not None:
        declared = sections[bot.section]
        section = (declared.id or d.section_id(fleet, declared.name), declared.name)
    line, column = item.doc.locate(item.loc)
    env = {**d.env_entries(bot.env, base), **d.mcp_secret_env(bot, base)}
    return d.DesiredBot(
        name=bot.name,
        origin=d.Origin(item.doc.source, line, column),
        title=bot.title,
        description=bot.description,
        display_name=bot.display_name,
        soul=soul,
        avatar=d.avatar_meta(bot.avatar) if bot.avatar else None,
        avatar_image=str((item.base_dir / bot.avatar.image).resolve()) if bot.avatar and bot.avatar.image else None,
        hidden=bot.hidden,
        pinned=bot.pinned,
        section=section,
        config=d.bot_config(bot),
        env=env,
        routines=tuple(routines),
        clone_from=bot.clone_from,
        create_empty=bool(bot.create_empty),
        host=bot.host,
        renamed_from=bot.renamed_from,
        labels=dict(bot.labels or {}),
    )


def _install_config(policy: PolicySpec, peers: list[Peer]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    gateway = policy.gateway
    if gateway is not None:
        if gateway.bot_loop_guard is not None:
            out.update(d.flatten(gateway.bot_loop_guard.model_dump(exclude_none=True), "gateway.bot_loop_guard."))
        if gateway.bot_mode_protocol is not None:
            out["agent.bot_mode_protocol"] = gateway.bot_mode_protocol
        if gateway.group_router is not None:
            out.update(d.flatten(gateway.group_router.model_dump(exclude_none=True), "auxiliary.group_router."))
    if policy.checkpoints is not None:
        out.update(d.flatten(policy.checkpoints.model_dump(exclude_none=True), "checkpoints."))
    for peer in peers:
        entry: dict[str, Any] = {"url": peer.url.rstrip("/")}
        if peer.note:
            entry["note"] = peer.note
        out.update(d.flatten(entry, f"bot_peers.{peer.name}."))
    if policy.config:
        out.update(d.flatten(policy.config))
    return out
