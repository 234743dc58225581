"""Code cites Hermes facts only from docs/hermes/ in this repository, and every citation resolves."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"docs/hermes/([a-z-]+\.md)((?:#[a-z0-9-]+)?)((?:, #[a-z0-9-]+)*)")
OUTSIDE = re.compile(r"hermes-formats\.md|bot-mode-state\.md|gateway-groups-contract\.md|/work/shared|\.\./shared")


def _anchors(doc: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 -]", "", title).replace(" ", "-"))
    return out


def _sources() -> list[Path]:
    return [p for folder in ("controller", "tests", "bench") for p in (REPO / folder).rglob("*.py")]


def test_every_docs_hermes_citation_resolves() -> None:
    broken, checked = [], set()
    for path in _sources():
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            checked.add(match.group(1))
            doc = REPO / "docs" / "hermes" / match.group(1)
            anchors = [a for a in (match.group(2) + match.group(3)).replace(", ", "").split("#") if a]
            if not doc.is_file():
                broken.append(f"{path.relative_to(REPO)}: {match.group(0)} (no such file)")
            elif missing := [a for a in anchors if a not in _anchors(doc)]:
                broken.append(f"{path.relative_to(REPO)}: {match.group(0)} (no heading for {missing})")
    assert broken == []
    # The regex must keep finding the citations: most notes in docs/hermes/ are cited from code.
    notes = {p.name for p in (REPO / "docs" / "hermes").glob("*.md")} - {"README.md"}
    assert len(checked) >= len(notes) // 2, f"only {sorted(checked)} of {sorted(notes)} matched: is CITATION stale?"


def test_no_code_cites_notes_outside_the_repository() -> None:
    hits = [
        f"{p.relative_to(REPO)}"
        for p in _sources()
        if p.name != Path(__file__).name and OUTSIDE.search(p.read_text(encoding="utf-8"))
    ]
    assert hits == []


def test_every_reason_code_is_documented() -> None:
    from controller.core.types import Reason

    table = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert [code.value for code in Reason if f"| `{code.value}` |" not in table] == []


def _effect_rows() -> list[list[str]]:
    """The Effect table's rows, parsed as scripts/gen_docs.py parses them for the README."""
    from tests.unit.test_readme_hermes_table import generator

    rows: list[list[str]] = generator().effect_rows((REPO / "docs" / "manifest.md").read_text(encoding="utf-8"))
    return rows


def test_the_effect_table_covers_every_field_and_names_tests_that_exist() -> None:
    """docs/manifest.md "Effect": every Bot and Fleet/Policy field has a row, every row a real test."""
    from controller.manifests.models import Bot, FleetSpec

    rows = _effect_rows()
    text = " ".join(row[0] for row in rows)
    bot_fields = set(Bot.model_fields) - {"name", "host", "renamed_from", "labels"}  # names, placement, selection: no Hermes key
    fleet_fields = {"config", "checkpoints", "gateway"}
    assert set(FleetSpec.model_fields) >= fleet_fields
    missing = [f for f in sorted(bot_fields) if f"`{f}`" not in text and f != "soul_file"]
    missing += [f"Fleet {f}" for f in sorted(fleet_fields) if f"Fleet/Policy `{f}`" not in text]
    assert missing == []
    effect_tests = (REPO / "tests" / "effect" / "test_effect_hermes.py").read_text(encoding="utf-8")
    for row in rows:
        for ref in re.findall(r"`([^`]+)`", row[3]):
            if ref.startswith("effect::"):
                assert f"def {ref.removeprefix('effect::')}(" in effect_tests, ref
            else:
                path, _, name = ref.partition("::")
                assert (REPO / path).is_file(), ref
                assert not name or f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), ref


def test_every_effect_row_names_its_run_or_says_why_there_is_none() -> None:
    """The "proven by a run" column: a `run::<file>::<test>` of tests/runtime/ that exists, or "none"."""
    for row in _effect_rows():
        assert len(row) == 5 and row[4], row[0]
        refs = re.findall(r"`(run::[^`]+)`", row[4])
        assert refs or row[4].startswith(("none", "as ")), row
        for ref in refs:
            path, _, name = ref.removeprefix("run::").partition("::")
            source = REPO / "tests" / "runtime" / path
            assert source.is_file() and f"def {name}(" in source.read_text(encoding="utf-8"), ref
