"""Restore is a full undo of prune: after `restore`, the manifests that had the bot converge without
--adopt, the bot's routines keep their job ids, and status shows no drift; while the manifests
still lack it, the restored bot is left alone (a `--prune` run does not prune it again).

Fleet v1 home; `beta` (a model pin, a config key, a paused routine) is dropped from the manifests
and pruned, then restored, then v1 is applied again. Before the fix the re-apply exited 3 ("a cron
job named '[bot:beta] Hold' exists that this fleet does not own") until --adopt.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.helpers import hermes_fleet
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes]


@pytest.fixture
def home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("HERMES_")]:
        monkeypatch.delenv(key)
    return scenario.copy_home(pristine.root, tmp_path / "home")


def without_beta(pristine: Pristine, folder: Path) -> Path:
    doc = json.loads(pristine.v1.read_text(encoding="utf-8"))
    doc["spec"]["bots"] = [b for b in doc["spec"]["bots"] if b["name"] != "beta"]
    for extra in ("alpha-soul.md", "avatar.png"):
        (folder / extra).write_bytes((pristine.v1.parent / extra).read_bytes())
    path = folder / "fleet.yaml"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def beta_jobs(home: Path) -> dict[str, str]:
    data = json.loads((home / "profiles" / "beta" / "cron" / "jobs.json").read_text(encoding="utf-8"))
    return {j["name"]: j["id"] for j in data["jobs"]}


def test_prune_restore_apply_converges_without_adopt(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    jobs_before = beta_jobs(home)
    assert "[bot:beta] Hold" in jobs_before
    smaller = without_beta(pristine, tmp_path)

    pruned = hermes_fleet("apply", "-f", smaller, "--home", home, "--prune")
    assert pruned.code == 0, pruned.text
    assert not (home / "profiles" / "beta").exists()
    (backup,) = (home / ".hermes-fleet" / "backups").iterdir()
    record = json.loads((backup / "BACKUP.json").read_text(encoding="utf-8"))
    assert sorted(record["inventory"]) == ["bot/beta", "routine/beta/Hold"]

    restored = hermes_fleet("restore", "--home", home, backup.name)
    assert restored.code == 0, restored.text
    assert "2 inventory record(s) of the bot and its routines kept" in restored.out
    assert not backup.exists(), "a restored backup leaves nothing behind"
    # While the manifests lack it, the restored bot is left alone: a --prune run does not prune it again.
    still = hermes_fleet("plan", "-f", smaller, "--home", home, "--prune", "-o", "json")
    assert not [o for o in json.loads(still.out)["objects"] if o["name"] == "beta" or o["name"].startswith("beta/")]

    again = hermes_fleet("apply", "-f", pristine.v1, "--home", home)  # no --adopt
    assert again.code == 0, again.text
    plan = hermes_fleet("plan", "-f", pristine.v1, "--home", home, "--detailed-exitcode")
    assert plan.code == 0, plan.text
    status = hermes_fleet("status", "-f", pristine.v1, "--home", home, "-o", "json")
    (fleet,) = json.loads(status.out)["fleets"]
    assert fleet["drifted"] == 0, fleet["objects"]
    assert beta_jobs(home) == jobs_before, "the routine kept its job: neither recreated nor duplicated"


def test_an_interrupted_restore_finishes_when_run_again(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    """Killed between moving the tree back and giving the records back: the second restore finishes."""
    pruned = hermes_fleet("apply", "-f", without_beta(pristine, tmp_path), "--home", home, "--prune")
    assert pruned.code == 0, pruned.text
    (backup,) = (home / ".hermes-fleet" / "backups").iterdir()
    (backup / "profile").rename(home / "profiles" / "beta")  # what the kill left: the tree is back, the record too
    again = hermes_fleet("restore", "--home", home, backup.name)
    assert again.code == 0, again.text
    assert "2 inventory record(s) of the bot and its routines kept" in again.out
    converged = hermes_fleet("apply", "-f", pristine.v1, "--home", home)
    assert converged.code == 0, converged.text
    plan = hermes_fleet("plan", "-f", pristine.v1, "--home", home, "--detailed-exitcode")
    assert plan.code == 0, plan.text
