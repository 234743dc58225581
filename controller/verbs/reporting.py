"""Reporting: turn validation results (and plans) into text, JSON, GitHub annotations or JUnit.

Pure string building; the CLI writes the result to stdout. Secret values never reach this
module: plans carry `redact.SECRET` for them, and every value shown passes `redact.masked`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from controller.core.insights import Insights
from controller.core.types import FieldChange, ObjectChange, Plan
from controller.diagnostics import Diagnostic, capped, omitted_line
from controller.engine.applying import ApplyResult, Outcome
from controller.manifests.validating import ValidationResult
from controller.redact import Withheld, masked, unforgeable
from controller.verbs.terminal import use_color as use_color  # the verbs call reporting.use_color

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

JSON_SCHEMA_VERSION = 1


class Palette:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


# --- validation ------------------------------------------------------------------------------


def validation_summary(result: Any) -> dict[str, Any]:
    counts = result.state.counts if result.state is not None else {}
    return {
        "files": len(result.files),
        "documents": result.documents,
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        **counts,
    }


def validation_text(result: ValidationResult, *, strict: bool, color: bool) -> str:
    p = Palette(color)
    lines = []
    shown, omitted = capped(result.diagnostics)
    for diag in shown:
        label = p.red("error") if diag.severity == "error" else p.yellow("warning")
        field = f"{diag.path}: " if diag.path else ""
        hint = f"; {diag.hint}" if diag.hint else ""
        lines.append(f"{p.bold(diag.where)}: {label}: {field}{diag.message}{hint}")
    if omitted:
        lines.append(omitted_line(omitted))
    s = validation_summary(result)
    failed = s["errors"] or (strict and s["warnings"])
    verdict = p.red("invalid") if failed else p.green("valid")
    what = ""
    if result.state is not None:
        c = result.state.counts
        what = (
            f": fleet {result.state.fleet!r}, {c['bots']} bot(s), {c['routines']} routine(s), "
            f"{c['sections']} section(s), {c['rooms']} room(s), {c['peers']} peer(s)"
        )
    lines.append(
        f"{verdict}{what} — {s['files']} file(s), {s['errors']} error(s), {s['warnings']} warning(s)"
        + (" (--strict: warnings fail)" if strict and s["warnings"] and not s["errors"] else "")
    )
    return "\n".join(lines) + "\n"


def validation_json(result: ValidationResult, *, strict: bool) -> str:
    s = validation_summary(result)
    shown, omitted = capped(result.diagnostics)
    payload = {
        "schemaVersion": JSON_SCHEMA_VERSION,
        "valid": not (s["errors"] or (strict and s["warnings"])),
        "fleet": result.state.fleet if result.state is not None else None,
        "digest": result.state.digest if result.state is not None else None,
        "summary": {**s, "omitted": omitted},  # diagnostics beyond the first MAX_SHOWN
        "diagnostics": [d.to_json() for d in shown],
    }
    return json.dumps(payload, indent=2) + "\n"


def validation_json_fleets(results: list[ValidationResult], *, strict: bool) -> str:
    """One JSON document for one or several fleets: the totals at the top, each fleet in `fleets[]`.

    With one fleet the top level is exactly `validation_json`'s document; `fleet` and `digest` are
    null there when the paths hold several fleets (each entry of `fleets[]` has its own).
    """
    per_fleet = [json.loads(validation_json(r, strict=strict)) for r in results]
    if len(per_fleet) == 1:
        top = dict(per_fleet[0])
    else:
        top = json.loads(validation_json(merged_result(results), strict=strict))
        top["valid"] = all(f["valid"] for f in per_fleet)
    payload = {"schemaVersion": JSON_SCHEMA_VERSION, "kind": "validate", **top}
    payload["fleets"] = [{k: v for k, v in f.items() if k != "schemaVersion"} for f in per_fleet]
    return json.dumps(payload, indent=2) + "\n"


def merged_result(results: list[ValidationResult]) -> ValidationResult:
    """Several fleets' results as one (for the formats that have no notion of a fleet: github, junit)."""
    if len(results) == 1:
        return results[0]
    files = list(dict.fromkeys(f for r in results for f in r.files))
    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda x: (x.file, x.line, x.column))
    return ValidationResult(diagnostics, None, files, sum(r.documents for r in results))


def validation_text_fleets(results: list[ValidationResult], *, strict: bool, color: bool) -> str:
    """Each fleet's findings and verdict line; with several fleets, a last line counting them."""
    text = "".join(validation_text(r, strict=strict, color=color) for r in results)
    if len(results) > 1:
        bad = sum(1 for r in results if r.errors or r.state is None or (strict and r.warnings))
        p = Palette(color)
        verdict = p.red("invalid") if bad else p.green("valid")
        text += f"{verdict}: {len(results)} fleet(s), {len(results) - bad} valid, {bad} invalid\n"
    return text


def _gh_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def validation_github(result: ValidationResult, *, strict: bool) -> str:
    """GitHub Actions workflow commands: one ::error / ::warning annotation per diagnostic."""
    lines = []
    shown, omitted = capped(result.diagnostics)
    for diag in shown:
        level = "error" if diag.severity == "error" or strict else "warning"
        props = [f"file={_gh_escape(diag.file, prop=True)}"]
        if diag.line:
            props += [f"line={diag.line}", f"col={diag.column}"]
        props.append(f"title={_gh_escape('hermes-fleet ' + diag.code, prop=True)}")
        message = (f"{diag.path}: " if diag.path else "") + diag.message + (f"; {diag.hint}" if diag.hint else "")
        lines.append(f"::{level} {','.join(props)}::{_gh_escape(message)}")
    s = validation_summary(result)
    if omitted:
        lines.append(omitted_line(omitted))
    lines.append(f"hermes-fleet validate: {s['errors']} error(s), {s['warnings']} warning(s) in {s['files']} file(s)")
    return "\n".join(lines) + "\n"


def validation_junit(result: ValidationResult, *, strict: bool) -> str:
    """JUnit XML: one test case per manifest file; each diagnostic is a failure in it.

    Built with `xml.etree`, which escapes markup. Characters XML 1.0 cannot carry at all (control
    characters, U+FFFE, U+FFFF, lone surrogates) are written as `\\xNN` / `\\uNNNN` text first.
    """
    from xml.etree import ElementTree as ET  # JUnit output only: plan and apply never need it

    by_file: dict[str, list[Diagnostic]] = {f: [] for f in result.files}
    shown, omitted = capped(result.diagnostics)
    failing = {d.file for d in result.diagnostics if d.severity == "error" or strict}
    for diag in shown:
        by_file.setdefault(diag.file, []).append(diag)
    counts = {"tests": str(len(by_file)), "failures": str(sum(1 for file in by_file if file in failing))}
    root = ET.Element("testsuites", {"name": "hermes-fleet validate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "hermes-fleet validate", **counts, "errors": "0"})
    for file, diags in by_file.items():
        _junit_case(ET.SubElement(suite, "testcase", classname="hermes-fleet.validate", name=_xml_safe(file)), diags, strict)
    if omitted:
        ET.SubElement(root, "system-out").text = _xml_safe(omitted_line(omitted))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _junit_case(case: Element, diags: list[Diagnostic], strict: bool) -> None:
    from xml.etree import ElementTree as ET

    for diag in diags:
        if diag.severity == "error" or strict:
            failure = ET.SubElement(case, "failure", type=_xml_safe(diag.code), message=_xml_safe(diag.message))
            failure.text = _xml_safe(diag.render())
    warnings = [x.render() for x in diags if x.severity == "warning" and not strict]
    if warnings:
        ET.SubElement(case, "system-out").text = _xml_safe("\n".join(warnings))


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_safe(text: str) -> str:
    """`text` with what XML 1.0 cannot carry spelt out (`\\x01`); escaping the rest is etree's job."""
    return _XML_INVALID.sub(lambda m: repr(m.group(0))[1:-1], text)


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text)


# --- plans and apply results --------------------------------------------------------------------

_SIGIL = {
    "create": "+",
    "update": "~",
    "adopt": "~",
    "rename": ">",
    "delete": "-",
    "conflict": "!",
    "error": "!",
    "orphan": "?",
    "release": "-",
    "no-op": "=",
}
_OP_SIGIL = {"add": "+", "change": "~", "remove": "-"}


def shown(value: Any, where: str = "") -> Any:
    """A plan value as outputs show it: credentials masked by the one rule (controller/redact.py;
    a live file may hold one that no manifest put there; manifests cannot). `where`: the field."""
    return masked(value, where)


def _fmt(value: Any, where: str = "") -> str:
    value = shown(value, where)
    if isinstance(value, Withheld):
        return value  # (secret), (12 lines, sha256:...): known by its type, never by its text
    kind = type(value)
    if kind is str:
        if len(value) <= 118 and not _JSON_ESCAPED.search(value):
            return f'"{value}"'  # what json.dumps gives (ensure_ascii=False): nothing to escape
    elif kind is bool or value is None:
        return _JSON_CONSTANTS[value]
    elif kind is int:
        return str(value)
    text = json.dumps(unforgeable(value), ensure_ascii=False, default=str)  # a real "(secret)" inside: "\\(secret)"
    return text if len(text) <= 120 else text[:117] + "..."


# What json.dumps escapes in a string with ensure_ascii=False (json.encoder.ESCAPE).
_JSON_ESCAPED = re.compile(r'[\x00-\x1f\\"]')
_JSON_CONSTANTS = {True: "true", False: "false", None: "null"}


def plan_text(plan: Plan, *, home: str, color: bool, verbose: bool = False) -> str:
    return "\n".join(plan_lines(plan, home=home, color=color, verbose=verbose)) + "\n"


def write_lines(lines: Iterable[str], stream: TextIO | None = None, *, batch: int = 4096) -> None:
    """Write `"\\n".join(lines) + "\\n"` a few thousand lines at a time: the plan of a fresh
    10,000-bot home is 600,000 lines, never held whole (memory)."""
    out = stream or sys.stdout
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= batch:
            out.write("\n".join(chunk) + "\n")
            chunk.clear()
    if chunk:
        out.write("\n".join(chunk) + "\n")


# --- how much of a plan a text report shows (docs/cli.md#plan-views) ---------------------
# `detail`: every field of every object; `compact`: one line per object with its field count;
# `grouped`: one line per kind and action (apply, past GROUP_OBJECTS objects); `summary`: the
# summary line only (-q). JSON is always complete.
DETAIL = "detail"
COMPACT = "compact"
GROUPED = "grouped"
SUMMARY = "summary"
DETAIL_LINES = 40  # a plan whose full diff fits in this many lines is shown whole
GROUP_OBJECTS = 30  # apply: more changed objects than this are shown one line per kind and action
LIST_LINES = 5  # notes, capabilities and routine rates past this are counted (all shown with --detail)
NAMES_SHOWN = 3  # names in a grouped line


def plan_view(plan: Plan, *, detail: bool = False, quiet: bool = False, group: bool = False) -> str:
    """The view a text report uses: -q and --detail as asked, else the full diff when it is short,
    else compact (plan) or grouped (apply, when there are many objects)."""
    if quiet:
        return SUMMARY
    if detail:
        return DETAIL
    changed = [c for c in plan.changes if c.action.value != "no-op"]
    if len(changed) + sum(len(c.fields) for c in changed) <= DETAIL_LINES:
        return DETAIL
    return GROUPED if group and len(changed) > GROUP_OBJECTS else COMPACT


def plan_lines(plan: Plan, *, home: str, color: bool, verbose: bool = False, view: str = DETAIL) -> Iterator[str]:
    """The lines of `plan_text`, one at a time."""
    p = Palette(color)
    if view == SUMMARY:
        yield plan_summary_line(plan, p)
        return
    yield p.bold(f"Fleet {plan.fleet!r}") + p.dim(f" · manifests {plan.digest[:19]} · home {home}")
    yield ""
    if view == GROUPED:
        yield from _grouped_lines(plan, p)
    else:
        yield from _object_lines(plan, p, verbose=verbose, fields=view == DETAIL)
    yield ""
    yield from _capped([p.cyan(f"note: {note}") for note in plan.notes], None if view == DETAIL else LIST_LINES, "note(s)", p)
    yield plan_summary_line(plan, p)


def _capped(lines: list[str], limit: int | None, what: str, p: Palette, indent: str = "") -> list[str]:
    if limit is None or len(lines) <= limit:
        return lines
    if limit == 0:
        return []
    return [*lines[:limit], p.dim(f"{indent}... and {len(lines) - limit:,} more {what} (--detail or -o json shows all)")]


def _paint(p: Palette) -> dict[str, Any]:
    return {"+": p.green, "~": p.yellow, ">": p.yellow, "-": p.red, "!": p.red, "?": p.cyan, "=": p.dim}


def _object_lines(plan: Plan, p: Palette, *, verbose: bool, fields: bool) -> Iterator[str]:
    paint = _paint(p)
    quiet = 0
    for change in plan.changes:
        if change.action.value == "no-op" and not verbose:
            quiet += 1
            continue
        sigil = _SIGIL[change.action.value]
        label = f"{change.kind}/{change.name}"
        drift = p.yellow(" [drift]") if change.drift else ""
        head = (
            paint[sigil](f"{sigil} {label}")
            + f"  {change.action.value}{drift}"
            + (p.dim(f" ({change.reason})") if change.reason else "")
        )
        if not fields:
            yield head + (p.dim(f"  {field_summary(change.fields)}") if change.fields else "")
            continue
        yield head
        yield from _field_lines(change, p)
    if quiet:
        yield p.dim(f"= {quiet} object(s) unchanged")


def field_summary(changes: tuple[FieldChange, ...], width: int = 90) -> str:
    """`27 field(s): botchat, botmode, config:platform_toolsets.* (23), meta:title`: the fields
    of one object, those sharing a dotted prefix three or more times counted as one."""
    names = [f.field for f in changes]
    prefixes: dict[str, int] = {}
    for name in names:
        prefixes[name.rpartition(".")[0]] = prefixes.get(name.rpartition(".")[0], 0) + 1
    parts: list[str] = []
    for name in names:
        prefix = name.rpartition(".")[0]
        part = f"{prefix}.* ({prefixes[prefix]})" if prefix and prefixes[prefix] >= 3 else name
        if part not in parts:
            parts.append(part)
    drifted = sum(1 for f in changes if f.drift)
    text = f"{len(names)} field(s): " + ", ".join(parts)
    if len(text) > width:
        text = text[: width - 3].rsplit(", ", 1)[0] + ", ..."
    return text + (f"; {drifted} drifted" if drifted else "")


def _grouped_lines(plan: Plan, p: Palette) -> Iterator[str]:
    """One line per kind and action: `+ 1,000 bot(s)  create (profile does not exist): bot0, bot1,
    bot2 and 997 more · 27 field(s) each`."""
    paint = _paint(p)
    groups: dict[tuple[str, str], list[ObjectChange]] = {}
    for change in plan.changes:
        groups.setdefault((change.action.value, change.kind.value), []).append(change)
    for (action, kind), members in groups.items():
        if action == "no-op":
            yield p.dim(f"= {len(members):,} {kind}(s) unchanged")
            continue
        sigil = _SIGIL[action]
        reasons = {c.reason for c in members}
        reason = p.dim(f" ({members[0].reason})") if len(reasons) == 1 and members[0].reason else ""
        names = ", ".join(c.name for c in members[:NAMES_SHOWN])
        more = f" and {len(members) - NAMES_SHOWN:,} more" if len(members) > NAMES_SHOWN else ""
        counts = sorted({len(c.fields) for c in members})
        each = f" · {counts[0]}" if len(counts) == 1 else f" · {counts[0]}-{counts[-1]}"
        each = "" if counts == [0] else each + (" field(s) each" if len(members) > 1 else " field(s)")
        drifted = sum(1 for c in members if c.drift)
        drift = p.yellow(f" [{drifted:,} drifted]") if drifted else ""
        yield paint[sigil](f"{sigil} {len(members):,} {kind}(s)") + f"  {action}{drift}{reason}: {names}{more}{each}"


def _field_lines(change: ObjectChange, p: Palette) -> Iterator[str]:
    paint = _paint(p)
    for f in change.fields:
        s = _OP_SIGIL[f.op]
        if f.op == "add":
            body = f"{f.field} = {_fmt(f.new, f.field)}"
        elif f.op == "remove":
            body = f"{f.field} (was {_fmt(f.old, f.field)})"
        else:
            body = f"{f.field}: {_fmt(f.old, f.field)} -> {_fmt(f.new, f.field)}"
        mark = p.yellow("  (drift: changed outside hermes-fleet)") if f.drift else ""
        mark += p.dim("  (install-wide)") if f.inherited else ""
        yield "    " + paint[s](s) + " " + body + mark


def plan_summary_line(plan: Plan, p: Palette | None = None) -> str:
    p = p or Palette(False)
    c = plan.counts()
    parts = [f"{c['create']} to create", f"{c['update']} to update", f"{c['adopt']} to adopt", f"{c['delete']} to delete"]
    if c["rename"]:
        parts.insert(3, f"{c['rename']} to rename")
    extra = []
    if c["orphan"]:
        extra.append(f"{c['orphan']} orphaned (kept; --prune deletes)")
    if c["release"]:
        extra.append(f"{c['release']} to release")
    if plan.drifted:
        extra.append(p.yellow(f"{len(plan.drifted)} drifted"))
    if c["conflict"]:
        extra.append(p.red(f"{c['conflict']} conflict(s)"))
    if c["error"]:
        extra.append(p.red(f"{c['error']} error(s)"))
    if plan.has_changes:
        head = "Plan: " + ", ".join(parts) + "."
    elif c["error"] or c["conflict"]:
        head = "No changes planned for the objects that could be compared."
    else:
        head = "No changes: the home matches the manifests."
    return head + (" " + "; ".join(extra) + "." if extra else "")


def plan_json(
    plan: Plan, *, home: str, results: ApplyResult | None = None, kind: str = "plan", insights: Insights | None = None
) -> str:
    payload: dict[str, Any] = {
        "schemaVersion": JSON_SCHEMA_VERSION,
        "kind": kind,
        "fleet": plan.fleet,
        "digest": plan.digest,
        "home": home,
        "summary": {**plan.counts(), "drifted": len(plan.drifted), "changes_pending": plan.has_changes},
        "notes": list(plan.notes),
        "hermes_extras": list(plan.hermes_extras),
        "objects": [
            {
                "kind": c.kind.value,
                "name": c.name,
                "action": c.action.value,
                "reason_code": c.code.value,
                "reason": c.reason,
                "drift": c.drift,
                "origin": c.origin,
                "fields": [
                    {
                        "field": f.field,
                        "op": f.op.value,
                        "old": unforgeable(shown(f.old, f.field)),
                        "new": unforgeable(shown(f.new, f.field)),
                        "secret": f.secret,
                        "drift": f.drift,
                        "inherited": f.inherited,
                    }
                    for f in c.fields
                ],
            }
            for c in plan.changes
        ],
    }
    if results is not None:
        payload["results"] = [
            {"object": o.change.key, "action": o.change.action.value, "ok": o.ok, "error": o.error or None}
            | ({"writes": list(o.writes)} if o.change.kind == "room" else {})
            for o in results.outcomes
        ]
        payload["summary"]["failed"] = len(results.failed)
        payload["swept"] = results.swept
        payload["history_entry"] = results.history_entry
        payload["replaced"] = results.replaced_dir
    if insights is not None:
        payload["insights"] = insights.to_json()
    return json.dumps(payload, indent=2, default=str) + "\n"


def insights_text(ins: Insights, *, color: bool, view: str = DETAIL) -> str:
    """The reviewer's summary under a plan: capability changes, scheduled model runs, loop risks
    (the headlines only in the summary view; a few lines of each in the compact views)."""
    p = Palette(color)
    limit = {DETAIL: None, SUMMARY: 0}.get(view, LIST_LINES)
    lines: list[str] = []
    if ins.capabilities:
        widening = len(ins.widening)
        lines.append(p.bold("Capabilities") + f": {widening} widening, {len(ins.capabilities) - widening} other change(s)")
        listed = []
        for c in ins.capabilities:
            paint = p.red if c.direction == "widening" else (p.green if c.direction == "narrowing" else p.dim)
            listed.append(f"  {paint(c.direction.ljust(9))} {c.describe()}")
        lines += _capped(listed, limit, "capability change(s)", p, "  ")
    if ins.runs_before or ins.runs_after or ins.one_shots_before or ins.one_shots_after:
        delta = ins.runs_after - ins.runs_before
        sign = "+" if delta >= 0 else ""
        lines.append(
            p.bold("Scheduled LLM runs per day")
            + f": {ins.runs_before:.4g} -> {ins.runs_after:.4g} ({sign}{delta:.4g})"
            + (
                f"; one-shots {ins.one_shots_before} -> {ins.one_shots_after}"
                if ins.one_shots_before or ins.one_shots_after
                else ""
            )
        )
        rates = [f"  routine/{r.routine}: {r.before:.4g} -> {r.after:.4g}" for r in ins.rates]
        lines += _capped(rates, limit, "routine(s)", p, "  ")
    if ins.loops:
        lines.append(p.bold("Loop risks") + f": {len(ins.loops)}")
        loops = []
        for x in ins.loops:
            paint = p.red if x.severity == "high" else p.yellow
            loops.append(f"  {paint(x.severity.ljust(7))} {x.kind} {x.subject!r}: {x.detail}")
        lines += _capped(loops, limit, "loop risk(s)", p, "  ")
    return "\n".join(lines) + "\n" if lines else ""


_DONE = {
    "create": "created",
    "update": "updated",
    "adopt": "adopted",
    "rename": "renamed",
    "delete": "deleted",
    "release": "released",
}
# What a deletion keeps: a bot's profile goes to a restorable backup (`hermes-fleet restore`); a
# routine's job and a room are gone (the apply history still holds the manifests that made them).
_DELETED = {"bot": "deleted (backed up)", "room": "deleted (disbanded)"}


def done_word(change: ObjectChange) -> str:
    if change.action.value == "delete":
        return _DELETED.get(str(change.kind), _DONE["delete"])
    return _DONE[change.action.value]


FAILURE_LINES = 20  # failed objects listed one per line after a large apply (all with --detail, and in -o json)


def apply_text(results: ApplyResult, *, color: bool, not_applied: int = 0, view: str = DETAIL) -> str:
    """What an apply did: a line per object (detail, or a small apply), else only the objects that
    failed or wait (at most FAILURE_LINES) and the counts of what was done."""
    p = Palette(color)
    lines = []
    if results.swept:
        lines.append(p.dim(f"removed {len(results.swept)} leftover(s) of an interrupted run: {', '.join(results.swept)}"))
    every = view == DETAIL or (view != SUMMARY and len(results.outcomes) <= GROUP_OBJECTS)
    listed = [line for o in results.outcomes if (line := _outcome_line(o, p, every))]
    lines += _capped(listed, None if every else FAILURE_LINES, "object(s) not done", p)
    done, failed = len(results.done), len(results.failed) + not_applied
    what = "" if every or not done else " (" + _done_counts(results) + ")"
    if failed:
        lines.append(
            p.red(f"Apply finished with {failed} failure(s), {done} object(s) converged{what}. ")
            + "Fix the causes above and run apply again; it picks up where this one stopped."
        )
    else:
        lines.append(p.green(f"Apply complete: {done} object(s) changed{what}."))
    return "\n".join(lines) + "\n"


def _outcome_line(o: Outcome, p: Palette, every: bool) -> str:
    label = f"{o.change.kind}/{o.change.name}"
    sent = p.dim(f"  [{', '.join(o.writes)}]") if o.writes else ""
    if o.ok:
        if not every:
            return ""
        n = len(o.change.fields)
        detail = f" ({n} field(s))" if n and o.change.action.value != "delete" else ""
        return p.green(f"{label}: {done_word(o.change)}") + detail + sent
    if o.pending:  # nothing answered, or a seat waits: the next run tries again
        return p.yellow(f"{label}: {o.error}") + sent
    return p.red(f"{label}: failed") + f": {o.error}" + sent


def _done_counts(results: ApplyResult) -> str:
    """`1,000 bot(s) created, 1,000 routine(s) created`."""
    counts: dict[tuple[str, str], int] = {}
    for o in results.done:
        key = (o.change.kind.value, done_word(o.change))
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n:,} {kind}(s) {done}" for (kind, done), n in counts.items())
