"""Concurrency: real Hermes writers run while `apply` converges the same files, over many rounds.

Each round changes the manifests (legacy's title in profile.yaml, beta's config.yaml key, legacy's
routine in cron/jobs.json) and, at the same time, starts three real hermes-agent 0.19.0 writers on
exactly those files: `hermes -p legacy cron create` (cron/jobs.json, under Hermes' flock),
`hermes -p beta config set` of an unmanaged key (config.yaml, no lock in Hermes), and
`hermes profile describe legacy --text` (profile.yaml, Hermes' own `write_profile_meta`: no lock,
not even atomic). The start of `apply` is staggered against the writers round by round, so the
writes land before, during and after ours. Afterwards every external write and every managed value
must be there, and a plan shows no changes. A Hermes writer without a lock that read a file before
our write and replaced it after puts its stale copy over our value (nothing on our side can stop
that); the next apply restores ours and keeps theirs, which is what a round then checks.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.integration.helpers import hermes_fleet
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

ROUNDS = 12


def round_manifest(v1: Path, folder: Path, r: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for extra in ("alpha-soul.md", "avatar.png"):
        (folder / extra).write_bytes((v1.parent / extra).read_bytes())
    doc = json.loads(v1.read_text(encoding="utf-8"))
    bots = {b["name"]: b for b in doc["spec"]["bots"]}
    bots["legacy"]["title"] = f"Legacy round {r}"
    bots["legacy"]["routines"][0]["schedule"] = f"{r} 2 * * *"
    bots["beta"]["config"] = {"approvals.mode": "smart", "agent.max_turns": 20 + r}
    path = folder / "fleet.yaml"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def test_real_hermes_writers_during_apply_lose_nothing(
    pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = scenario.copy_home(pristine.root, tmp_path / "home")
    cli = scenario.hermes_cli(home, tmp_path / "hermes-scratch")  # before HOME moves: it finds the venv
    assert cli is not None
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    env = cli.env()
    legacy, beta = home / "profiles" / "legacy", home / "profiles" / "beta"
    external_jobs: list[str] = []
    retried = overwritten = 0
    for r in range(1, ROUNDS + 1):
        manifest = round_manifest(pristine.v1, tmp_path / f"m{r}", r)
        job = f"external job {r}"
        writers = [
            subprocess.Popen(
                [str(cli.binary), "-p", "legacy", "cron", "create", "every 3h", f"ext prompt {r}", "--name", job],
                env=env,
                cwd=cli.userhome,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
            subprocess.Popen(
                [str(cli.binary), "-p", "beta", "config", "set", f"ext_round_{r}", str(r)],
                env=env,
                cwd=cli.userhome,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
            subprocess.Popen(
                [str(cli.binary), "profile", "describe", "legacy", "--text", f"described in round {r}"],
                env=env,
                cwd=cli.userhome,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        ]
        time.sleep(0.05 * (r % 8))  # stagger: our writes land before, among and after theirs
        run = hermes_fleet("apply", "-f", manifest, "--home", home)
        outputs = [w.communicate(timeout=120)[0] for w in writers]
        assert all(w.returncode == 0 for w in writers), outputs
        if run.code != 0:
            # A profile.yaml write that raced Hermes more than three times in a row is reported
            # (exit 1, "changed while hermes-fleet was updating it") and finished by the next apply.
            assert run.code == 1 and "changed while hermes-fleet was updating it" in run.text, run.text
            retried += 1
            run = hermes_fleet("apply", "-f", manifest, "--home", home)
            assert run.code == 0, run.text
        external_jobs.append(job)

        # Theirs: every external write of every round so far.
        names = scenario.job_names(home, "legacy")
        missing = [j for j in external_jobs if j not in names]
        assert not missing, f"round {r}: hermes cron jobs lost: {missing}"
        assert scenario.HAND_JOB in names
        config = load_yaml(beta / "config.yaml")
        lost = [k for k in range(1, r + 1) if config.get(f"ext_round_{k}") != k]
        assert not lost, f"round {r}: hermes config set lost for rounds {lost}"
        meta = load_yaml(legacy / "profile.yaml")
        assert meta.get("description") == f"described in round {r}", f"round {r}: Hermes' description lost"
        for ns, value in scenario.FOREIGN_UI_META.items():
            assert meta["ui_meta"].get(ns) == value, f"round {r}: foreign ui_meta {ns} lost"
        # Ours: every managed value of this round. Hermes' `config set` and `profile describe` take no
        # lock (docs/hermes/files.md): one that read the file before our write and replaces it after
        # puts its stale copy back, which no writer of ours can prevent. Then the next apply (or
        # watch) restores our value, and theirs stays.
        ours = ((config.get("agent") or {}).get("max_turns"), meta["ui_meta"]["hermes-bots"].get("title"))
        if ours != (20 + r, f"Legacy round {r}"):  # a stale copy may predate the key itself
            overwritten += 1
            again = hermes_fleet("apply", "-f", manifest, "--home", home)
            assert again.code == 0, again.text
            config, meta = load_yaml(beta / "config.yaml"), load_yaml(legacy / "profile.yaml")
            assert [k for k in range(1, r + 1) if config.get(f"ext_round_{k}") != k] == [], f"round {r}: theirs lost"
            assert meta.get("description") == f"described in round {r}", f"round {r}: Hermes' description lost"
        assert meta["ui_meta"]["hermes-bots"]["title"] == f"Legacy round {r}", f"round {r}: our title lost"
        assert config["agent"]["max_turns"] == 20 + r, f"round {r}: our config value lost"
        nightly = [
            j for j in json.loads((legacy / "cron" / "jobs.json").read_text())["jobs"] if j["name"] == "[bot:legacy] Nightly"
        ]
        assert len(nightly) == 1 and nightly[0]["schedule"]["expr"] == f"{r} 2 * * *", f"round {r}: routine"
        plan = hermes_fleet("plan", "-f", manifest, "--home", home, "--detailed-exitcode")
        assert plan.code == 0, f"round {r}: not converged\n{plan.text}"
    print(
        f"concurrency: {ROUNDS} rounds, {3 * ROUNDS} Hermes writes, {retried} apply(s) retried, "
        f"{overwritten} round(s) where a Hermes write put a stale copy over ours (restored by the next apply)"
    )
