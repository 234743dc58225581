"""`validate --output text|json|github|junit`, warnings versus errors, and --strict."""

from __future__ import annotations

import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from controller import cli

VALID = """\
    apiVersion: hermes-fleet/v1
    kind: Fleet
    metadata: {name: acme}
    spec:
      bots:
        - name: a
          routines:
            - {name: daily, schedule: "0 8 * * *", prompt: go}
        - name: b
"""
WARNING_ONLY = """\
    apiVersion: hermes-fleet/v1
    kind: Fleet
    metadata: {name: acme}
    spec:
      bots:
        - name: a
          routines:
            - {name: busy, schedule: every 1m, prompt: go}
"""
ERRORS = """\
    apiVersion: hermes-fleet/v1
    kind: Bot
    metadata: {name: Bad, fleet: acme}
    spec:
      env: {OPENAI_API_KEY: sk-live}
      routines:
        - {name: busy, schedule: every 1m, prompt: go}
"""


@pytest.fixture
def manifests(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, text in (("valid", VALID), ("warning", WARNING_ONLY), ("errors", ERRORS)):
        folder = tmp_path / name
        folder.mkdir()
        paths[name] = folder / "fleet.yaml"
        paths[name].write_text(textwrap.dedent(text))
    return paths


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["--color", "never", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out


# --- text ----------------------------------------------------------------------------------------


def test_text_valid_summary(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-f", str(manifests["valid"]))
    assert code == 0
    assert out == (
        "valid: fleet 'acme', 2 bot(s), 1 routine(s), 0 section(s), 0 room(s), 0 peer(s) — 1 file(s), 0 error(s), 0 warning(s)\n"
    )


def test_text_lines_are_file_line_column_severity_path_message_hint(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-f", str(manifests["errors"]))
    assert code == 2
    f = manifests["errors"]
    lines = out.splitlines()
    assert (
        f"{f}:3:12: error: metadata.name: 'Bad' is not a valid profile name: Hermes lower-cases and strips "
        "profile names; write 'bad'" in lines
    )
    assert (
        f"{f}:5:9: error: spec.env.OPENAI_API_KEY: "
        "OPENAI_API_KEY looks like a secret but has a literal value; "
        "write 'OPENAI_API_KEY: {from_env: OPENAI_API_KEY}' (or from_file, from_command) and keep the value out of git" in lines
    )
    assert any(
        line.startswith(f"{f}:7:") and ": warning: spec.routines[0].schedule: 'every 1m' runs every 1 minute" in line
        for line in lines
    )
    assert lines[-1] == "invalid — 1 file(s), 2 error(s), 1 warning(s)"
    assert "sk-live" not in out  # the literal secret is never echoed


def test_text_colour_only_when_asked(manifests, capsys) -> None:
    assert cli.main(["--color", "always", "validate", "-f", str(manifests["errors"])]) == 2
    assert "\033[31merror\033[0m" in capsys.readouterr().out
    _, out = run(capsys, "validate", "-f", str(manifests["errors"]))
    assert "\033[" not in out


def test_warnings_alone_pass_and_strict_makes_them_fail(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-f", str(manifests["warning"]))
    assert code == 0
    assert ": warning: " in out and out.splitlines()[-1].startswith("valid:")
    code, out = run(capsys, "validate", "--strict", "-f", str(manifests["warning"]))
    assert code == 2
    assert out.splitlines()[-1].startswith("invalid:")
    assert out.rstrip().endswith("(--strict: warnings fail)")


# --- json ----------------------------------------------------------------------------------------

DIAGNOSTIC_KEYS = {"severity", "file", "line", "column", "path", "message", "hint", "code"}
SUMMARY_KEYS = {"files", "documents", "errors", "warnings", "omitted"}
COUNT_KEYS = {"bots", "routines", "sections", "rooms", "peers"}


def test_json_shape_when_valid(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "json", "-f", str(manifests["valid"]))
    payload = json.loads(out)
    assert code == 0
    assert set(payload) == {"schemaVersion", "kind", "valid", "fleet", "digest", "summary", "diagnostics", "fleets"}
    assert payload["schemaVersion"] == 1 and payload["kind"] == "validate"
    assert payload["fleets"] == [{k: v for k, v in payload.items() if k not in ("schemaVersion", "kind", "fleets")}]
    assert payload["valid"] is True
    assert payload["fleet"] == "acme"
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", payload["digest"])
    assert payload["summary"] == {
        "files": 1,
        "documents": 1,
        "errors": 0,
        "warnings": 0,
        "omitted": 0,
        "bots": 2,
        "routines": 1,
        "sections": 0,
        "rooms": 0,
        "peers": 0,
    }
    assert payload["diagnostics"] == []


def test_json_shape_when_invalid(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "json", "-f", str(manifests["errors"]))
    payload = json.loads(out)
    assert code == 2
    assert payload["valid"] is False
    assert payload["fleet"] is None and payload["digest"] is None
    assert set(payload["summary"]) == SUMMARY_KEYS  # no counts without a desired state
    assert payload["summary"]["errors"] == 2 and payload["summary"]["warnings"] == 1
    for diag in payload["diagnostics"]:
        assert set(diag) == DIAGNOSTIC_KEYS
        assert diag["severity"] in ("error", "warning")
        assert isinstance(diag["line"], int) and isinstance(diag["column"], int)
    assert {d["code"] for d in payload["diagnostics"]} == {"name", "secret_literal", "frequent_schedule"}
    assert "sk-live" not in out


def test_json_strict_marks_warnings_invalid(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "json", "--strict", "-f", str(manifests["warning"]))
    payload = json.loads(out)
    assert code == 2
    assert payload["valid"] is False
    assert payload["summary"]["errors"] == 0 and payload["summary"]["warnings"] == 1
    assert payload["fleet"] == "acme"  # the state was still built: warnings do not stop it


def test_json_reports_file_level_problems(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\x00\x01")
    code, out = run(capsys, "validate", "-o", "json", "-f", str(path))
    diag = json.loads(out)["diagnostics"][0]
    assert code == 2
    assert diag == {
        "severity": "error",
        "file": str(path),
        "line": 1,  # where the first NUL byte is
        "column": 1,
        "path": "",
        "message": "this is a binary file, not YAML (it contains NUL bytes)",
        "hint": "pass only manifest files with -f",
        "code": "binary",
    }


# --- github ----------------------------------------------------------------------------------------

ANNOTATION = re.compile(
    r"^::(error|warning) file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"title=(?P<title>[^:]+)::(?P<message>.+)$"
)


def test_github_annotations(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "github", "-f", str(manifests["errors"]))
    assert code == 2
    lines = out.splitlines()
    annotations = [ANNOTATION.match(x) for x in lines[:-1]]
    assert all(annotations), lines
    levels = sorted(m.group(1) for m in annotations)
    assert levels == ["error", "error", "warning"]
    escaped_file = str(manifests["errors"]).replace(":", "%3A").replace(",", "%2C")
    assert {m.group("file") for m in annotations} == {escaped_file}
    secret = next(m for m in annotations if "OPENAI_API_KEY" in m.group("message"))
    assert (secret.group("line"), secret.group("col")) == ("5", "9")
    assert secret.group("title") == "hermes-fleet secret_literal"
    assert lines[-1] == "hermes-fleet validate: 2 error(s), 1 warning(s) in 1 file(s)"


def test_github_strict_turns_warnings_into_errors(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "github", "--strict", "-f", str(manifests["warning"]))
    assert code == 2
    assert out.startswith("::error file=")


def test_github_escapes_newlines_percent_and_property_separators(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "a,b:c"
    folder.mkdir()
    path = folder / "m.yaml"
    path.write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec:\n"
        '  bots: [{name: a, title: "100% \\nsure", section: X}]\n'
    )
    code, out = run(capsys, "validate", "-o", "github", "-f", str(path))
    assert code == 2
    annotation = out.splitlines()[0]
    assert "file=" + str(path).replace(":", "%3A").replace(",", "%2C") + "," in annotation
    assert "\n" not in annotation


def test_github_file_level_annotation_has_no_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)  # a problem of the whole file: no line to point at
    code, out = run(capsys, "validate", "-o", "github", "-f", str(path))
    assert code == 2
    assert out.splitlines()[0].startswith(f"::error file={path},title=hermes-fleet unreadable::")


def test_a_binary_file_is_located_at_its_first_nul_byte(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"apiVersion: x\nkind: \x00")
    code, out = run(capsys, "validate", "-o", "github", "-f", str(path))
    assert code == 2
    assert out.splitlines()[0].startswith(f"::error file={path},line=2,col=7,title=hermes-fleet binary::")


# --- junit -----------------------------------------------------------------------------------------


def junit(out: str) -> ET.Element:
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    return root


def test_junit_counts_one_case_per_file_and_failures(tmp_path: Path, manifests, capsys) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a-fleet.yaml").write_text(textwrap.dedent(VALID))
    (folder / "b-bad.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {name: x, fleet: acme}\nspec: {section: Nowhere, hidden: maybe}\n"
    )
    (folder / "c-ok.yaml").write_text("apiVersion: hermes-fleet/v1\nkind: Section\nmetadata: {name: T, fleet: acme}\n")
    code, out = run(capsys, "validate", "-o", "junit", "-f", str(folder))
    assert code == 2
    root = junit(out)
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [str(folder / n) for n in ("a-fleet.yaml", "b-bad.yaml", "c-ok.yaml")]
    assert root.get("tests") == suite.get("tests") == "3"
    assert root.get("failures") == suite.get("failures") == "1"
    bad = cases[1]
    failures = bad.findall("failure")
    # hidden: maybe, and (the document without it checked on) section Nowhere, in the same run
    assert sorted(f.get("type") for f in failures) == ["invalid_value", "reference"]
    assert any("Nowhere" in f.get("message") for f in failures)
    assert all(f.text.startswith(f"{folder / 'b-bad.yaml'}:4:") for f in failures)
    assert cases[0].findall("failure") == [] and cases[2].findall("failure") == []


def test_junit_warnings_are_output_not_failures_unless_strict(manifests, capsys) -> None:
    code, out = run(capsys, "validate", "-o", "junit", "-f", str(manifests["warning"]))
    assert code == 0
    case = junit(out).find("testsuite/testcase")
    assert case.findall("failure") == []
    assert "warning" in case.find("system-out").text
    code, out = run(capsys, "validate", "-o", "junit", "--strict", "-f", str(manifests["warning"]))
    assert code == 2
    root = junit(out)
    assert root.get("failures") == "1"
    assert root.find("testsuite/testcase/failure").get("type") == "frequent_schedule"


def test_junit_is_well_formed_with_markup_in_messages(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec:\n"
        '  bots: [{name: a, section: "<b>&amp;\\"\'</b>"}]\n'
    )
    code, out = run(capsys, "validate", "-o", "junit", "-f", str(path))
    assert code == 2
    failure = junit(out).find("testsuite/testcase/failure")
    assert "section '<b>&amp;\"\\'</b>' is not declared" in failure.get("message")


def test_junit_reads_back_exactly_what_the_diagnostics_say() -> None:
    from controller.diagnostics import Diagnostic
    from controller.manifests.validating import ValidationResult
    from controller.verbs import reporting

    file = 'fleet/<a&b>"q".yaml'
    message = "section '<b>&amp;\"x\"</b>' is not declared\n\tsecond line \x01 end"
    error = Diagnostic(
        severity="error", file=file, line=3, column=5, path="spec.bots[0]", message=message, hint="a & b", code="reference"
    )
    warning = Diagnostic(severity="warning", file=file, line=4, column=1, path="", message='<w> & "w"', code="frequent")
    result = ValidationResult(diagnostics=[error, warning], state=None, files=[file], documents=1)
    root = ET.fromstring(reporting.validation_junit(result, strict=False))
    case = root.find("testsuite/testcase")
    failure = case.find("failure")
    spelt = error.render().replace("\x01", "\\x01")  # XML 1.0 cannot carry U+0001: its escape, as text
    assert case.get("name") == file
    assert failure.get("message") == message.replace("\x01", "\\x01")  # newline and tab kept in the attribute
    assert failure.get("type") == "reference"
    assert failure.text == spelt
    assert case.find("system-out").text == warning.render()
    assert (root.get("tests"), root.get("failures")) == ("1", "1")


def test_junit_counts_a_binary_file_as_a_failed_case(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.yaml").write_text(textwrap.dedent(VALID))
    (tmp_path / "b.yaml").write_bytes(b"\x00")
    code, out = run(capsys, "validate", "-o", "junit", "-f", str(tmp_path))
    root = junit(out)
    assert code == 2
    assert (root.get("tests"), root.get("failures")) == ("2", "1")


def test_not_applied_lines_are_capped_with_a_count_of_the_rest() -> None:
    from controller.core.types import Action, Kind, ObjectChange, Reason
    from controller.verbs.plan import not_applied

    errors = [
        ObjectChange(kind=Kind.ROOM, name=f"R{i}", action=Action.ERROR, code=Reason.MANAGED, reason=f"waits for bot/b{i}")
        for i in range(25)
    ]
    errors += [
        ObjectChange(kind=Kind.BOT, name=f"b{i}", action=Action.ERROR, code=Reason.MANAGED, reason="env KEY: unset")
        for i in range(4)
    ]
    lines = not_applied(errors, limit=3)
    assert lines == [
        "hermes-fleet: room/R0 not applied: waits for bot/b0",
        "hermes-fleet: room/R1 not applied: waits for bot/b1",
        "hermes-fleet: room/R2 not applied: waits for bot/b2",
        "hermes-fleet: 26 more objects not applied, for other causes (each is in the plan above, and in -o json)",
    ]
    assert len(not_applied(errors)) == 21 and not_applied(errors)[-1].startswith(
        "hermes-fleet: 9 more objects"
    )  # R20-R24 and the 4 bots
