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
    broken = []
    for path in _sources():
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            doc = REPO / "docs" / "hermes" / match.group(1)
            anchors = [a for a in (match.group(2) + match.group(3)).replace(", ", "").split("#") if a]
            if not doc.is_file():
                broken.append(f"{path.relative_to(REPO)}: {match.group(0)} (no such file)")
            elif missing := [a for a in anchors if a not in _anchors(doc)]:
                broken.append(f"{path.relative_to(REPO)}: {match.group(0)} (no heading for {missing})")
    assert broken == []


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
