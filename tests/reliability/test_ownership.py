"""Ownership cannot be forked: a bot is owned by at most one fleet, proven by the owner marker in its
profile and checked against every inventory (docs/reliability.md#ownership). And an inventory key
is a name, never a path.

Fleet v1 (`acme`) home. A second fleet, `other`, declares one bot (`beta`). Before the fix:
prune -> restore -> marker removed -> `other` adopts -> `beta` back in acme's manifests gave both
fleets the bot; a profile made by hand at a name acme's inventory still remembered was overwritten
without --adopt, its hand-made 0644 `.env` then holding acme's secret; `bot/../../x` in the
inventory made a release unlink a marker outside the home.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.integration.helpers import hermes_fleet, plan_json, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine
from tests.reliability.test_restore_undo import without_beta

pytestmark = [pytest.mark.hermes]


@pytest.fixture
def home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("HERMES_")]:
        monkeypatch.delenv(key)
    return scenario.copy_home(pristine.root, tmp_path / "home")


def other_fleet(folder: Path, bot: str = "beta") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": "other"},
        "spec": {"bots": [{"name": bot, "title": "Other's Beta"}]},
    }
    path = folder / "other.yaml"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def marker(home: Path, bot: str) -> dict[str, str] | None:
    path = home / "profiles" / bot / ".hermes-fleet-owner.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def inventory(home: Path, fleet: str) -> dict:
    return json.loads((home / ".hermes-fleet" / "inventory" / f"{fleet}.json").read_text(encoding="utf-8"))


def test_prune_restore_unmark_adopt_readd_never_gives_a_bot_two_owners(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    smaller = without_beta(pristine, tmp_path)
    assert hermes_fleet("apply", "-f", smaller, "--home", home, "--prune").code == 0
    (backup,) = (home / ".hermes-fleet" / "backups").iterdir()
    assert hermes_fleet("restore", "--home", home, backup.name).code == 0
    (home / "profiles" / "beta" / ".hermes-fleet-owner.json").unlink()  # the marker removed by hand

    # acme's restored record still claims beta: the other fleet cannot adopt it.
    theirs = other_fleet(tmp_path / "other")
    adopt = hermes_fleet("apply", "-f", theirs, "--home", home, "--adopt")
    assert adopt.code == 3, adopt.text
    assert "owned by fleet 'acme'" in adopt.text, adopt.text
    assert marker(home, "beta") is None and not (home / ".hermes-fleet" / "inventory" / "other.json").exists()

    # Had it got in anyway (acme's inventory lost, then restored from a copy): acme's re-add is refused.
    saved = (home / ".hermes-fleet" / "inventory" / "acme.json").read_bytes()
    (home / ".hermes-fleet" / "inventory" / "acme.json").unlink()
    assert hermes_fleet("apply", "-f", theirs, "--home", home, "--adopt").code == 0
    assert marker(home, "beta")["fleet"] == "other"
    (home / ".hermes-fleet" / "inventory" / "acme.json").write_bytes(saved)
    readd = hermes_fleet("apply", "-f", pristine.v1, "--home", home)
    assert readd.code == 3 and "bot/beta" in readd.text and "owned by fleet 'other'" in readd.text, readd.text
    assert marker(home, "beta")["fleet"] == "other"
    assert "bot/beta" not in inventory(home, "acme")["objects"]

    # acme lets it go: the record goes, the profile and other's marker stay.
    released = hermes_fleet("apply", "-f", smaller, "--home", home, "--prune")
    assert released.code == 0, released.text
    assert (home / "profiles" / "beta").is_dir() and marker(home, "beta")["fleet"] == "other"
    assert "bot/beta" not in inventory(home, "acme")["objects"]
    assert hermes_fleet("plan", "-f", theirs, "--home", home, "--detailed-exitcode").code == 0


def test_restore_is_refused_when_another_fleet_owns_the_name(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    assert hermes_fleet("apply", "-f", without_beta(pristine, tmp_path), "--home", home, "--prune").code == 0
    (backup,) = (home / ".hermes-fleet" / "backups").iterdir()
    assert hermes_fleet("apply", "-f", other_fleet(tmp_path / "other"), "--home", home).code == 0  # other creates beta
    shutil.rmtree(home / "profiles" / "beta")  # and its profile goes outside hermes-fleet
    before = snapshot(home)
    run = hermes_fleet("restore", "--home", home, backup.name)
    assert run.code == 3, run.text
    assert "fleet 'other' owns a bot of that name" in run.text and "Traceback" not in run.text, run.text
    lock = ".hermes-fleet/apply.lock"  # the lock holder's note is the only change
    assert {k: v for k, v in snapshot(home).items() if k != lock} == {k: v for k, v in before.items() if k != lock}


def test_a_hand_made_profile_at_a_remembered_name_needs_adopt(pristine: Pristine, home: Path) -> None:
    alpha = home / "profiles" / "alpha"
    shutil.rmtree(alpha)  # deleted outside hermes-fleet; acme's inventory still has bot/alpha
    alpha.mkdir()
    (alpha / "config.yaml").write_text("model:\n  default: mine\n", encoding="utf-8")
    (alpha / ".env").write_text("MY_OWN_TOKEN=hand-made-secret\n", encoding="utf-8")
    os.chmod(alpha / ".env", 0o644)
    before = snapshot(home)
    run = hermes_fleet("apply", "-f", pristine.v1, "--home", home)
    assert run.code == 3, run.text
    assert "bot/alpha" in run.text and "no owner marker" in run.text and "--adopt" in run.text, run.text
    assert snapshot(home) == before
    adopted = hermes_fleet("apply", "-f", pristine.v1, "--home", home, "--adopt")
    assert adopted.code == 0, adopted.text
    assert marker(home, "alpha")["fleet"] == "acme"
    assert scenario.mode(alpha / ".env") & 0o007 == 0, "a secret went into a world-readable .env"
    assert "MY_OWN_TOKEN=hand-made-secret" in (alpha / ".env").read_text(encoding="utf-8")


def test_an_inventory_key_that_is_a_path_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / ".hermes-fleet-owner.json").write_text('{"fleet": "acme", "profile": "../../victim"}\n')
    path = home / ".hermes-fleet" / "inventory" / "acme.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["objects"]["bot/../../victim"] = {"applied": {}}
    path.write_text(json.dumps(data), encoding="utf-8")
    before, outside = snapshot(home), snapshot(victim)
    for argv in (("apply", "--prune"), ("plan",), ("status",)):
        run = hermes_fleet(argv[0], "-f", pristine.v1, "--home", home, *argv[1:])
        assert run.code not in (0, 2) and "Traceback" not in run.text, run.text
        assert "'bot/../../victim' names no object hermes-fleet makes" in run.text, run.text
    assert snapshot(home) == before and snapshot(victim) == outside


@pytest.mark.parametrize(
    ("planted", "names"),
    [
        ({"fleet": "other", "profile": "beta"}, "fleet 'other'"),
        ({"fleet": "acme", "profile": "alpha"}, "profile 'alpha' of fleet 'acme'"),
    ],
    ids=["another fleet", "another profile"],
)
def test_a_well_formed_marker_a_bot_wrote_is_its_error_not_the_fleets(
    pristine: Pristine, home: Path, planted: dict[str, str], names: str
) -> None:
    """A bot writes its own folder: a well-formed marker naming another fleet or profile, in a profile
    only acme's inventory records, puts that bot in error (exit 1, the fix named); every other bot is
    planned and applied (a conflict used to refuse the whole apply, exit 3). --adopt writes acme's
    marker again."""
    path = home / "profiles" / "beta" / ".hermes-fleet-owner.json"
    path.write_text(json.dumps(planted), encoding="utf-8")
    plan = hermes_fleet("plan", "-f", pristine.v2, "--home", home, "-o", "json")
    assert plan.code == 1, plan.text
    objects = {f"{o['kind']}/{o['name']}": o for o in json.loads(plan.out)["objects"]}
    beta = objects["bot/beta"]
    assert beta["action"] == "error" and beta["reason_code"] == "marker-mismatch", beta
    assert names in beta["reason"] and str(path) in beta["reason"] and "--adopt" in beta["reason"], beta
    assert objects["bot/alpha"]["action"] == "update", objects["bot/alpha"]

    applied = hermes_fleet("apply", "-f", pristine.v2, "--home", home)
    assert applied.code == 1 and "bot/beta" in applied.text and "Traceback" not in applied.text, applied.text
    after = {f"{o['kind']}/{o['name']}": o for o in plan_json(pristine.v2, home)["objects"]}
    assert after["bot/beta"]["action"] == "error", after["bot/beta"]
    others = {k: o["action"] for k, o in after.items() if k.startswith("bot/") and k != "bot/beta"}
    assert set(others.values()) <= {"no-op", "orphan"}, others  # the other bots were applied
    assert json.loads(path.read_text(encoding="utf-8")) == planted  # nothing of beta's was written

    adopted = hermes_fleet("apply", "-f", pristine.v2, "--home", home, "--adopt")
    assert adopted.code == 0, adopted.text
    assert marker(home, "beta") == {**marker(home, "beta"), "fleet": "acme", "profile": "beta"}
    assert hermes_fleet("plan", "-f", pristine.v2, "--home", home, "--detailed-exitcode").code == 0
