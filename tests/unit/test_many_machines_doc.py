"""docs/many-machines.md: its manifest examples validate together, and the files it points at exist."""

from __future__ import annotations

import re
from pathlib import Path

from tests.integration.helpers import hermes_fleet

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "many-machines.md"


def test_the_guides_manifests_validate_as_one_fleet(tmp_path: Path) -> None:
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), re.DOTALL) if "apiVersion: hermes-fleet/v1" in b]
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        (tmp_path / f"doc{i}.yaml").write_text(block)
    run = hermes_fleet("validate", "-f", tmp_path)
    assert run.code == 0, run.text


def test_the_files_the_guide_names_exist() -> None:
    text = GUIDE.read_text()
    named = set(re.findall(r"`((?:ansible|examples|tests|bench)/[\w./-]+)`", text))
    named |= {m.lstrip("./") for m in re.findall(r"\]\(\.\./([\w./-]+)\)", text)}
    assert named, "the guide names files"
    generated = ("ansible/credentials/",)  # made on the control node by the password lookup
    missing = sorted(n for n in named if not n.startswith(generated) and not (REPO / n.split("#")[0]).exists())
    assert missing == []
