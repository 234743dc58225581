"""`plan --out FILE` / `apply --plan FILE` (docs/cli.md#saved-plans): a reviewed plan applies
exactly; a stale one (manifests, home, or what the plan would now do) is refused with exit 3 and
nothing written. Real files in a temporary home, the CLI in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.helpers import apply, assert_converged, hermes_fleet, plan, write_fleet


def tree(home: Path) -> dict[str, bytes]:
    return {p.relative_to(home).as_posix(): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def saved(manifest: Path, home: Path, out: Path, *flags: str) -> dict:
    run = plan(manifest, home, "--out", out, *flags)
    assert run.code == 0, run.text
    return json.loads(out.read_text())


def test_a_reviewed_plan_applies_exactly(home: Path, manifests: Path, tmp_path: Path) -> None:
    assert apply(write_fleet(manifests, [{"name": "a", "title": "Alpha"}]), home).code == 0
    manifest = write_fleet(manifests, [{"name": "a", "title": "Alpha Two"}, {"name": "b", "title": "Beta"}])
    data = saved(manifest, home, tmp_path / "plan.json")
    assert data["kind"] == "saved-plan" and data["home"] == str(home)
    assert {f"{o['kind']}/{o['name']}": o["action"] for o in data["objects"]}["bot/b"] == "create"
    assert "profiles/a/profile.yaml" in data["observed"]["files"]
    run = apply(manifest, home, "--plan", tmp_path / "plan.json")
    assert run.code == 0, run.text
    assert_converged(manifest, home)


def test_a_plan_is_refused_when_the_manifests_changed(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "a", "title": "Alpha"}])
    saved(manifest, home, tmp_path / "plan.json")
    edited = write_fleet(manifests, [{"name": "a", "title": "Alpha Two"}])
    run = apply(edited, home, "--plan", tmp_path / "plan.json")
    assert run.code == 3, run.text
    assert "is stale, nothing was changed: the manifests changed (plan made from sha256:" in run.err
    assert not home.exists() or tree(home) == {}


def test_a_plan_is_refused_when_the_home_changed_and_says_which_file(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "a", "title": "Alpha", "config": {"agent.max_turns": 20}}])
    assert apply(manifest, home).code == 0
    assert plan(manifest, home, "--detailed-exitcode").code == 0
    saved(manifest, home, tmp_path / "plan.json")
    # A hand edit of a key the fleet does not manage: the plan would be the same, the home is not.
    config = home / "profiles" / "a" / "config.yaml"
    config.write_text(config.read_text() + "approvals_extra: 1\n")
    before = tree(home)
    run = apply(manifest, home, "--plan", tmp_path / "plan.json")
    assert run.code == 3, run.text
    assert "the home changed: edited profiles/a/config.yaml" in run.err
    after = tree(home)
    assert {k for k in after if k not in before or after[k] != before[k]} <= {".hermes-fleet/apply.lock"}


def test_a_plan_is_refused_when_a_profile_appeared(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "a", "title": "Alpha"}])
    saved(manifest, home, tmp_path / "plan.json")
    (home / "profiles" / "c").mkdir(parents=True)  # someone else's profile, made meanwhile
    (home / "profiles" / "c" / "config.yaml").write_text("model: {default: x}\n")
    run = apply(manifest, home, "--plan", tmp_path / "plan.json")
    assert run.code == 3, run.text
    assert "the home changed: new profiles/c/config.yaml" in run.err
    assert not (home / "profiles" / "a").exists()
    # The same profile in the way of the plan's own bot is a conflict, refused as ever (exit 3).
    (home / "profiles" / "a").mkdir(parents=True)
    assert apply(manifest, home, "--plan", tmp_path / "plan.json").code == 3
    assert not (home / "profiles" / "a" / "profile.yaml").exists()


def test_secrets_stay_references_in_the_plan_file(home: Path, manifests: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACME_TOKEN", "s3cr3t-value-xyz")
    manifest = write_fleet(manifests, [{"name": "a", "env": {"ACME_TOKEN": {"from_env": "ACME_TOKEN"}}}])
    saved(manifest, home, tmp_path / "plan.json")
    text = (tmp_path / "plan.json").read_text()
    assert "s3cr3t-value-xyz" not in text and "(secret)" in text
    assert apply(manifest, home, "--plan", tmp_path / "plan.json").code == 0
    assert "s3cr3t-value-xyz" in (home / "profiles" / "a" / ".env").read_text()


def test_the_saved_options_are_used_and_bad_files_are_usage_errors(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "a"}])
    saved(manifest, home, tmp_path / "plan.json")
    assert apply(manifest, home, "--plan", tmp_path / "plan.json", "--prune").code == 2
    (tmp_path / "bad.json").write_text("{}")
    run = apply(manifest, home, "--plan", tmp_path / "bad.json")
    assert run.code == 2 and "is not a saved plan" in run.err
    run = apply(manifest, home, "--plan", tmp_path / "missing.json")
    assert run.code == 2 and "cannot read the plan file" in run.err
    other = tmp_path / "other-home"
    run = hermes_fleet("apply", "-f", manifest, "--home", other, "--plan", tmp_path / "plan.json")
    assert run.code == 3 and f"it was made for the home {home}, not {other}" in run.err


def test_a_hand_edited_plan_file_is_a_usage_error_and_private(home: Path, manifests: Path, tmp_path: Path) -> None:
    """Wrong types in a plan file were tracebacks (one under the apply lock); the file holds a digest
    of every `.env`, so it is written 0600."""
    manifest = write_fleet(manifests, [{"name": "a"}])
    data = saved(manifest, home, tmp_path / "plan.json")
    assert (tmp_path / "plan.json").stat().st_mode & 0o777 == 0o600
    for field, value in (("options", []), ("observed", []), ("digest", 5), ("objects", {"a": 1})):
        (tmp_path / "bad.json").write_text(json.dumps({**data, field: value}))
        run = apply(manifest, home, "--plan", tmp_path / "bad.json")
        assert run.code == 2 and "is not a saved plan" in run.err and "Traceback" not in run.text, (field, run.text)


def test_a_saved_plan_keeps_rehost(home: Path, manifests: Path, tmp_path: Path) -> None:
    """`plan --rehost --out` then `apply --plan`: the move the reviewer saw is the one applied."""
    manifest = write_fleet(manifests, [{"name": "a", "host": "office"}, {"name": "b", "host": "spark"}])
    assert apply(manifest, home, "--host", "office").code == 0
    saved(manifest, home, tmp_path / "plan.json", "--host", "spark", "--rehost")
    run = apply(manifest, home, "--host", "spark", "--plan", tmp_path / "plan.json")
    assert run.code == 0, run.text
