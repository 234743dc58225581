"""The manifest pipeline in one call: discover -> parse -> validate -> desired state (-> host slice)."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Any

from controller.diagnostics import Diagnostic
from controller.manifests import desired, loading, validating

# A host name, as `host:` in manifests takes it (models.fleet.HostName); \Z: "$" would take a trailing newline.
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,253}\Z")


def load_paths(paths: list[str], *, recursive: bool, fleet: str | None, skip: Path | None = None) -> validating.ValidationResult:
    """Discover, parse and validate the manifests under `paths` as one fleet; problems become diagnostics.

    Documents of several fleets are one error per fleet, naming each fleet's files and how to pick
    one (plan and apply converge one fleet at a time; `load_fleets` validates them side by side).
    """
    files = loading.discover(paths, recursive=recursive, skip=skip)
    with loading.gc_paused():
        documents, problems = loading.load_files(files)
        groups = fleet_groups(documents, fleet)
        if len(groups) > 1:
            return _several_fleets(groups, files, problems, len(documents))
        return _validate(documents, problems, fleet, files)


def load_fleets(
    paths: list[str], *, recursive: bool, fleet: str | None, skip: Path | None = None
) -> list[validating.ValidationResult]:
    """Like `load_paths`, but each fleet found in `paths` is validated on its own (for `validate`).

    Documents that name no fleet belong to `--fleet` when given, else they are validated as a set of
    their own (which reports that they name no fleet). A file that does not parse is reported once,
    in a set of its own, since its fleet cannot be known.
    """
    files = loading.discover(paths, recursive=recursive, skip=skip)
    with loading.gc_paused():
        documents, problems = loading.load_files(files)
        groups = fleet_groups(documents, fleet)
        if len(groups) <= 1:
            return [_validate(documents, problems, fleet, files)]
        results = []
        for name, docs in groups.items():
            own_files = sorted({doc.source for doc in docs}, key=files.index)
            results.append(validating.validate(docs, fleet=fleet if name in (None, fleet) else None, files=own_files))
        if problems:
            broken = sorted({p.file for p in problems})
            results.append(validating.ValidationResult(list(problems), None, broken, 0))
        return results


def _validate(
    documents: list[loading.Document], problems: list[Diagnostic], fleet: str | None, files: list[str]
) -> validating.ValidationResult:
    if problems and not documents:
        # Every file failed to parse: those errors say it all (no second "no documents were read").
        return validating.ValidationResult(list(problems), None, files, 0)
    result = validating.validate(documents, fleet=fleet, files=files)
    result.diagnostics[:0] = problems
    if problems:
        result.state = None
    return result


def declared_fleet(data: Any) -> str | None:
    """The fleet a raw document names: a Fleet's metadata.name, any other kind's metadata.fleet."""
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        return None
    value = data["metadata"].get("name" if data.get("kind") == "Fleet" else "fleet")
    return value if isinstance(value, str) and value else None


def fleet_groups(documents: list[loading.Document], fleet: str | None) -> dict[str | None, list[loading.Document]]:
    """Documents by the fleet they name. One that names none belongs to --fleet, else to the only
    fleet the others name; with several, to None (validation then reports it names no fleet)."""
    named = {declared_fleet(doc.data) for doc in documents} - {None}
    default = fleet or (next(iter(named)) if len(named) == 1 else None)
    groups: dict[str | None, list[loading.Document]] = {}
    for doc in documents:
        groups.setdefault(declared_fleet(doc.data) or default, []).append(doc)
    return groups


def _several_fleets(
    groups: dict[str | None, list[loading.Document]], files: list[str], problems: list[Diagnostic], documents: int
) -> validating.ValidationResult:
    named = {name: docs for name, docs in groups.items() if name is not None}
    choices = ", ".join(f"-f {_pick(docs, groups)} for {name!r}" for name, docs in named.items())
    diagnostics = list(problems)
    for name, docs in named.items():
        first = docs[0]
        loc: tuple[object, ...] = ("metadata", "name" if first.data.get("kind") == "Fleet" else "fleet")
        line, column = first.locate(loc)
        diagnostics.append(
            Diagnostic(
                severity="error",
                file=first.source,
                line=line,
                column=column,
                path="metadata",
                message=f"fleet {name!r} ({len(docs)} document(s)) is one of {len(named)} fleets in these manifests "
                f"({', '.join(repr(n) for n in named)})",
                hint=f"plan and apply take one fleet at a time: pass only its files, {choices} "
                "(validate checks several fleets in one run)",
                code="fleet",
            )
        )
    return validating.ValidationResult(diagnostics, None, files, documents)


def _pick(docs: list[loading.Document], groups: dict[str | None, list[loading.Document]]) -> str:
    """The shortest -f argument that names exactly these documents' files: their common folder, if
    no other fleet's file lies inside it, else the files themselves."""
    own = sorted({doc.source for doc in docs})
    others = {doc.source for other in groups.values() if other is not docs for doc in other}
    folder = os.path.commonpath([os.path.dirname(f) or "." for f in own])
    inside = [f for f in others if os.path.commonpath([folder, os.path.dirname(f) or "."]) == folder]
    if len(own) > 1 and not inside:
        return folder
    return " ".join(own[:3]) + (" ..." if len(own) > 3 else "")


def selected_host(explicit: str | None, state: desired.DesiredState) -> str | None:
    """The machine whose slice applies: --host, else this hostname when the fleet names hosts."""
    if explicit:
        return str(explicit)
    return socket.gethostname() if desired.uses_hosts(state) else None
