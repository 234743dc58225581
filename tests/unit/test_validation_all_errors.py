"""Validation reports every error in one run (docs/manifest.md#validation-rules-and-codes): every
schema error of every document, and the later passes' errors of a document whose schema errors
are only unknown keys or wrong values of optional fields; hints that are themselves valid; messages
in manifest terms with a link to the section of docs/manifest.md that explains the field."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from controller.hermes import naming
from controller.manifests import validating
from controller.manifests.models import FleetDocument
from tests.integration.helpers import hermes_fleet

ROOT = Path(__file__).resolve().parents[2]

SEVEN = """\
    apiVersion: hermes-fleet/v1
    kind: Fleet
    metadata:
      name: acme
    spec:
      bots:
        - name: alpha
          titel: Alpha
          toolsets: web
          model:
            provider: openrouter
            modle: x
        - name: My Bot
          title: Mine
    ---
    apiVersion: hermes-fleet/v1
    kind: Bot
    metadata:
      name: beta
    spec:
      titel: Beta
      model: gpt-4
      routines:
        - name: r
          schedule: 5
          promt: hi
"""


def test_validate_prints_all_seven_errors_in_one_run(tmp_path: Path) -> None:
    manifest = tmp_path / "fleet.yaml"
    manifest.write_text(textwrap.dedent(SEVEN))
    run = hermes_fleet("validate", "-f", manifest)
    assert run.code == 2
    errors = [line.split(": error: ", 1)[1] for line in run.out.splitlines() if ": error: " in line]
    assert errors == [
        "spec.bots[0].titel: unknown field 'titel'; did you mean 'title'?",
        "spec.bots[0].toolsets: input should be a list (lines starting with '- '), got a string; see docs/manifest.md#bot",
        "spec.bots[0].model.modle: unknown field 'modle'; allowed fields here: base_url, default, provider "
        "(docs/manifest.md#model)",
        # A name error the schema pass never sees: found on the document without its bad keys.
        "spec.bots[1].name: 'My Bot' is not a valid profile name: a profile name is 1-64 characters of a-z, 0-9, '_' "
        "and '-', starting with a letter or digit (Hermes' rule ^[a-z0-9][a-z0-9_-]{0,63}$); write 'my-bot'",
        "spec.titel: unknown field 'titel'; did you mean 'title'?",
        "spec.model: input should be a mapping (key: value lines), got a string; see docs/manifest.md#model",
        "spec.routines[0].schedule: input should be a valid string, got a number; see docs/manifest.md#schedule-grammar",
        "spec.routines[0].promt: unknown field 'promt'; did you mean 'prompt'?",
    ]
    assert "instance of" not in run.out and "hermes-fleet schema" not in run.out
    assert run.out.splitlines()[-1].endswith("8 error(s), 0 warning(s)")


def test_a_salvaged_document_builds_no_state_and_changes_nothing(tmp_path: Path) -> None:
    manifest = tmp_path / "fleet.yaml"
    manifest.write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec:\n  bots:\n    - {name: a, titel: A}\n"
    )
    run = hermes_fleet("apply", "-f", manifest, "--home", tmp_path / "home")
    assert run.code == 2 and "unknown field 'titel'" in run.err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("data", "expect"),
    [
        ({"spec": {"bots": [{"name": "a", "titel": "A"}]}}, True),  # an unknown key: left out
        ({"spec": {"bots": [{"name": "a", "toolsets": [1]}]}}, True),  # a wrong item: its list left out
        ({"spec": {"bots": [{"title": "A"}]}}, False),  # a required field is missing
        ({"spec": [1]}, False),  # the envelope itself
        ({"spec": {"bots": ["a"]}}, False),  # a wrong object in a list of objects: never the whole list
    ],
)
def test_salvage_leaves_out_mapping_keys_only(data: dict, expect: bool) -> None:
    data = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "acme"}, **data}
    before = repr(data)
    try:
        FleetDocument.model_validate(data)
        raise AssertionError("the case must break the schema")
    except validating.ValidationError as exc:
        errors = validating._clean_errors(exc, data)
    salvaged = validating._salvage(FleetDocument, data, errors)
    assert (salvaged is not None) is expect
    assert repr(data) == before  # the document itself is untouched


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("My Bot", "my-bot"), (" Alpha ", "alpha"), ("Bad", "bad"), ("über bot!", "ber-bot"), ("--x--", "x"), ("!!!", None),
     ("Root", None), ("a" * 70, "a" * 64)],
)  # fmt: skip
def test_a_name_hint_suggests_a_valid_name(name: str, suggestion: str | None) -> None:
    problem = naming.profile_name_problem(name)
    assert problem is not None
    assert naming.suggested_profile_name(name) == suggestion
    if suggestion is None:
        assert "write" not in problem
    else:
        assert problem.endswith(f"write {suggestion!r}")
        assert naming.profile_name_problem(suggestion) is None


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower-cased, punctuation dropped, spaces as '-'."""
    headings = re.findall(r"^#{2,4} (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_linked_docs_section_exists() -> None:
    anchors = _anchors((ROOT / "docs" / "manifest.md").read_text())
    linked = {*validating._FIELD_SECTIONS.values(), *validating._MODEL_SECTIONS.values(), "documents"}
    assert linked <= anchors, linked - anchors


def test_a_document_refused_before_its_schema_adds_no_second_error(tmp_path: Path) -> None:
    """Another apiVersion is one error; it did not also leave "no fleet name" behind it."""
    path = tmp_path / "fleet.yaml"
    path.write_text("apiVersion: hermes-fleet/v2\nkind: Fleet\nmetadata: {name: acme}\nspec: {bots: [{name: a}]}\n")
    run = hermes_fleet("validate", "-f", path)
    assert run.code == 2 and "unknown apiVersion" in run.out and "1 error(s)" in run.out, run.text
