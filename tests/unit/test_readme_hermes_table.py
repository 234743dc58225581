"""README "What works on which Hermes" is generated from docs/manifest.md#effect (scripts/gen-docs):
the README's section must be exactly what the generator writes now."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from controller.manifests.effects import RETIRED

REPO = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_what_the_generator_writes() -> None:
    gen = generator()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    manifest = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    assert readme == gen.render(readme, manifest, RETIRED), "README.md is stale: run scripts/gen-docs"


def test_every_effect_row_and_retired_field_is_in_the_table() -> None:
    gen = generator()
    manifest = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    rows = gen.effect_rows(manifest)
    body = gen.table(manifest, RETIRED).splitlines()[2:]
    assert len(body) == len(rows) + len(RETIRED) and len(rows) >= 20
    by_field = {line.split(" | ")[0].removeprefix("| "): line for line in body}
    assert "no reader (Hermes main only)" in by_field["Section"]
    assert "yes, only with the `mcp` library" in by_field["Bot `mcp_servers`"]


def test_a_changed_effect_row_makes_the_readme_stale() -> None:
    gen = generator()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    manifest = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    changed = manifest.replace("| Section | ui_meta", "| Section | ui_meta", 1).replace(
        "main only: Desktop roster", "Desktop roster; 0.19.0"
    )
    assert changed != manifest and gen.render(readme, changed, RETIRED) != readme


def test_the_check_mode_passes_on_this_tree() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
