"""`hermes-fleet schema`, the committed schemas/ folder (fails when stale), and examples/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller import cli
from controller.manifests import loading, schema, validating
from controller.manifests.models import KINDS

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
EXAMPLES = REPO / "examples"
REGENERATE = "run `python -m controller.manifests.schema --write` and commit schemas/"


def test_schemas_folder_is_up_to_date() -> None:
    rendered = schema.rendered_files()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SCHEMAS.glob("*.json")}
    missing = sorted(set(rendered) - set(on_disk))
    extra = sorted(set(on_disk) - set(rendered))
    stale = sorted(name for name in set(rendered) & set(on_disk) if rendered[name] != on_disk[name])
    assert not (missing or extra or stale), f"schemas/ is stale (missing {missing}, extra {extra}, changed {stale}): {REGENERATE}"


def test_one_schema_file_per_kind_plus_the_union() -> None:
    assert set(schema.rendered_files()) == {"hermes-fleet.json", *(f"{k.lower()}.json" for k in KINDS)}


def test_schema_verb_prints_the_union_schema(capsys) -> None:
    assert cli.main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == schema.document_schema(None)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert printed["$id"] == schema.SCHEMA_ID
    assert set(printed["discriminator"]["mapping"]) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_verb_prints_one_kind(capsys, kind: str) -> None:
    assert cli.main(["schema", "--kind", kind]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["properties"]["kind"]["const"] == kind
    assert printed["additionalProperties"] is False
    assert printed["$id"].endswith(f"/{kind.lower()}.json")
    assert json.loads((SCHEMAS / f"{kind.lower()}.json").read_text()) == printed


def test_schema_verb_refuses_an_unknown_kind(capsys) -> None:
    assert cli.main(["schema", "--kind", "Robot"]) == 2
    err = capsys.readouterr().err
    assert "unknown kind 'Robot'" in err and "Fleet" in err


def test_schema_forbids_unknown_fields_in_bots() -> None:
    bot = schema.document_schema("Bot")
    assert bot["$defs"]["BotSpec"]["additionalProperties"] is False
    assert "soul_file" in bot["$defs"]["BotSpec"]["properties"]


def test_write_all_produces_what_rendered_files_says(tmp_path: Path) -> None:
    written = schema.write_all(tmp_path)
    assert {p.name: p.read_text(encoding="utf-8") for p in written} == schema.rendered_files()


def _is_manifest(path: Path) -> bool:
    return "apiVersion: hermes-fleet/" in path.read_text(encoding="utf-8")


def examples() -> list[Path]:
    """Each file directly in examples/ is one example; each sub-folder (read with -R) is another."""
    if not EXAMPLES.is_dir():
        return []
    out = []
    for entry in sorted(EXAMPLES.iterdir()):
        if entry.name.startswith("."):
            continue
        manifest = entry.is_file() and entry.suffix in (".yaml", ".yml")
        # A folder of other YAML (examples/monitoring: Prometheus files) is no fleet example.
        if manifest or (entry.is_dir() and any(p.suffix in (".yaml", ".yml") and _is_manifest(p) for p in entry.rglob("*"))):
            out.append(entry)
    return out


def test_examples_folder_has_manifests_once_it_exists() -> None:
    if not EXAMPLES.is_dir() or not any(EXAMPLES.iterdir()):
        pytest.skip("examples/ is not written yet")
    assert examples(), "examples/ exists but holds no .yaml/.yml manifest"


@pytest.mark.parametrize("example", examples(), ids=lambda p: p.name)
def test_every_example_validates(example: Path, capsys) -> None:
    code = cli.main(["--color", "never", "validate", "-R", "-f", str(example)])
    out = capsys.readouterr().out
    assert code == 0, out
    files = loading.discover([str(example)], recursive=True)
    documents, problems = loading.load_files(files)
    result = validating.validate(documents, files=files)
    assert problems == [] and result.errors == [] and result.state is not None
