"""`export` without --fleet names the home's one owner, and its `$schema` lines resolve (or are left out)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.helpers import apply, hermes_fleet

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {{name: {name}}}
spec:
  bots:
    - name: {bot}
      title: {title}
      soul: You are helpful.
"""


def write(folder: Path, name: str = "acme", bot: str = "alpha", title: str = "Alpha") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fleet.yaml"
    path.write_text(FLEET.format(name=name, bot=bot, title=title))
    return path


def schema_target(manifest: Path) -> Path | None:
    first = manifest.read_text().splitlines()[0]
    if not first.startswith("# yaml-language-server: $schema="):
        return None
    return (manifest.parent / first.split("$schema=", 1)[1]).resolve()


def test_export_names_the_one_owner_and_plans_clean_against_its_own_home(home, tmp_path, monkeypatch):
    assert apply(write(tmp_path / "m"), home).code == 0
    repo = tmp_path / "repo"
    assert hermes_fleet("init", repo, "--fleet", "acme").code == 0
    run = hermes_fleet("export", "--home", home, "--no-rooms", "--split", repo / "exported")
    assert run.code == 0, run.text
    assert "fleet 'acme' (default; --fleet names it)" in run.err
    fleet_doc = (repo / "exported" / "fleet.yaml").read_text()
    assert "name: acme" in fleet_doc
    plan = hermes_fleet("plan", "-f", repo / "exported", "--home", home, "--detailed-exitcode")
    assert plan.code == 0, plan.text  # no conflict with its own home, nothing to change
    # every written manifest points at the repository's schema, relative to itself
    written = list((repo / "exported").rglob("*.yaml"))
    assert written and all(schema_target(m) == (repo / "schemas/hermes-fleet.json").resolve() for m in written)
    assert hermes_fleet("validate", "-f", repo / "exported").code == 0


def test_export_to_stdout_and_to_a_file_reference_the_schema_relative_to_where_it_lands(home, tmp_path, monkeypatch):
    assert apply(write(tmp_path / "m"), home).code == 0
    repo = tmp_path / "repo"
    assert hermes_fleet("init", repo).code == 0
    out = repo / "fleet" / "from-home" / "all.yaml"
    assert hermes_fleet("export", "--home", home, "--no-rooms", "-o", out).code == 0
    assert schema_target(out) == (repo / "schemas/hermes-fleet.json").resolve()
    monkeypatch.chdir(repo / "fleet")
    run = hermes_fleet("export", "--home", home, "--no-rooms")
    assert run.out.startswith("# yaml-language-server: $schema=../schemas/hermes-fleet.json\n")


def test_without_a_schema_nearby_no_schema_line_is_written_and_a_warning_says_how(home, tmp_path):
    assert apply(write(tmp_path / "m"), home).code == 0
    run = hermes_fleet("export", "--home", home, "--no-rooms", "--split", tmp_path / "out")
    assert run.code == 0, run.text
    assert "no $schema line was written" in run.err and "hermes-fleet schema > schemas/hermes-fleet.json" in run.err
    for manifest in (tmp_path / "out").rglob("*.yaml"):
        assert "yaml-language-server" not in manifest.read_text()


def test_a_home_without_fleets_exports_as_exported_and_several_owners_need_fleet(home, tmp_path):
    (home / "profiles" / "loner").mkdir(parents=True)
    run = hermes_fleet("export", "--home", home, "--no-rooms")
    assert run.code == 0 and "name: exported" in run.out
    assert apply(write(tmp_path / "a"), home).code == 0
    assert apply(write(tmp_path / "b", name="other", bot="beta", title="Beta"), home).code == 0
    run = hermes_fleet("export", "--home", home, "--no-rooms")
    assert run.code == 2
    assert "is managed by 2 fleets (acme, other)" in run.err and "pass --fleet NAME" in run.err
    run = hermes_fleet("export", "--home", home, "--no-rooms", "--fleet", "other", "--bot", "beta")
    assert run.code == 0 and "name: other" in run.out
