"""Routines against the real hermes-agent 0.19.0: Hermes lists, runs and ticks the jobs apply
writes, what its scheduler writes back is not drift, and its own `cron create` racing our apply
loses nothing on either side (both hold `cron/.jobs.lock`).

0.19's `hermes cron ...` exits 0 even on failure, so every check reads the output or jobs.json.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from controller.core import jobs as routines_core
from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply, assert_converged, profile, write_fleet

pytestmark = pytest.mark.hermes


def jobs(root: Path, bot: str) -> list[dict[str, Any]]:
    return json.loads((profile(root, bot) / "cron" / "jobs.json").read_text(encoding="utf-8"))["jobs"]


def job_id(root: Path, bot: str, title: str) -> str:
    (found,) = [j["id"] for j in jobs(root, bot) if j["name"] == f"[bot:{bot}] {title}"]
    return found


def listed(hermes: HermesCLI, bot: str) -> dict[str, dict[str, str]]:
    """`hermes cron list --all` parsed: job id -> {state, Name, Schedule, ...}."""
    out = hermes.run("cron", "list", "--all", profile=bot).stdout
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in out.splitlines():
        head = re.match(r"^\s{2}([0-9a-f]{12}) \[(\w+)\]", line)
        if head:
            current = found.setdefault(head.group(1), {"state": head.group(2)})
            continue
        pair = re.match(r"^\s{4}([A-Z][\w ]*?):\s+(.*)$", line)
        if pair and current is not None:
            current[pair.group(1)] = pair.group(2).strip()
    return found


def ok(run: Any) -> None:
    assert run.code == 0, run.text


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


def test_hermes_lists_runs_and_ticks_what_apply_wrote(hermes: HermesCLI, hermes_root: Path, tmp_path: Path, env: None) -> None:
    manifest = write_fleet(
        tmp_path / "m",
        [
            {"name": "default", "routines": [{"name": "Morning", "schedule": "0 9 * * 1-5", "prompt": "Say hi"}]},
            {
                "name": "alpha",
                "title": "Alpha",
                "config": {"timezone": "Asia/Kolkata"},
                "routines": [
                    {"name": "Digest", "schedule": "30 7 * * *", "prompt": "Summarize 'news'", "skills": ["notes"]},
                    {"name": "Sweep", "schedule": "every 2h", "script": "hello.sh", "no_agent": True},
                    {"name": "Hold", "schedule": "every 1d", "prompt": "wait", "paused": True, "paused_reason": "away"},
                    {"name": "Later", "schedule": "2030-01-02T03:04", "script": "hello.sh", "no_agent": True},
                ],
            },
        ],
    )
    ok(apply(manifest, hermes_root, "--adopt"))

    shown = listed(hermes, "alpha")
    by_name = {v["Name"]: (k, v) for k, v in shown.items()}
    assert set(by_name) == {"[bot:alpha] Digest", "[bot:alpha] Sweep", "[bot:alpha] Hold", "[bot:alpha] Later"}
    assert by_name["[bot:alpha] Digest"][1]["Schedule"] == "30 7 * * *"
    assert by_name["[bot:alpha] Digest"][1]["state"] == "active"
    assert by_name["[bot:alpha] Digest"][1]["Next run"].endswith("T07:30:00+05:30")
    assert by_name["[bot:alpha] Digest"][1]["Skills"] == "notes"
    assert by_name["[bot:alpha] Sweep"][1]["Schedule"] == "every 120m"
    assert by_name["[bot:alpha] Hold"][1]["state"] == "paused"
    assert by_name["[bot:alpha] Later"][1]["Schedule"] == "once at 2030-01-02 03:04"
    assert by_name["[bot:alpha] Later"][1]["Repeat"] == "0/1"
    assert "[bot:alpha] Hold" not in hermes.run("cron", "list", profile="alpha").stdout  # paused: only --all
    (root_job,) = listed(hermes, "default").values()
    assert (root_job["Name"], root_job["Schedule"], root_job["state"]) == ("[bot:default] Morning", "0 9 * * 1-5", "active")

    # Hermes runs the no-agent job and writes its runtime fields; that is not drift.
    scripts = profile(hermes_root, "alpha") / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "hello.sh").write_text("#!/bin/sh\necho hello-from-routine\n", encoding="utf-8")
    (scripts / "hello.sh").chmod(0o755)
    sweep = job_id(hermes_root, "alpha", "Sweep")
    out = hermes.run("cron", "run", sweep, profile="alpha").stdout
    assert "succeeded" in out, out
    ran = next(j for j in jobs(hermes_root, "alpha") if j["id"] == sweep)
    assert ran["last_status"] == "ok" and ran["last_run_at"] and ran["repeat"]["completed"] == 1
    assert "hello-from-routine" in "".join(
        p.read_text() for p in (profile(hermes_root, "alpha") / "cron" / "output" / sweep).iterdir()
    )
    hermes.run("cron", "tick", profile="alpha")
    assert_converged(manifest, hermes_root)

    # The one-shot runs, Hermes deletes it, and the next plan neither recreates nor complains.
    # (0.19 then prints "Ran now: failed." because the job is gone when it reads the result back;
    # a one-shot made by `hermes cron create` does exactly the same. The output file is the proof.)
    later = job_id(hermes_root, "alpha", "Later")
    out = hermes.run("cron", "run", later, profile="alpha").stdout
    assert f"Triggered job: {later}" in out, out
    (report,) = (profile(hermes_root, "alpha") / "cron" / "output" / later).iterdir()
    assert "hello-from-routine" in report.read_text(encoding="utf-8")
    assert later not in {j["id"] for j in jobs(hermes_root, "alpha")}
    assert_converged(manifest, hermes_root)
    ok(apply(manifest, hermes_root))
    assert later not in {j["id"] for j in jobs(hermes_root, "alpha")} and len(jobs(hermes_root, "alpha")) == 3

    # Hermes' own pause / resume are drift from the manifests, and apply restores them.
    digest = job_id(hermes_root, "alpha", "Digest")
    hermes.run("cron", "pause", digest, profile="alpha")
    assert listed(hermes, "alpha")[digest]["state"] == "paused"
    ok(apply(manifest, hermes_root))
    assert listed(hermes, "alpha")[digest]["state"] == "active"
    assert_converged(manifest, hermes_root)


def test_hermes_cron_create_racing_apply_loses_no_job(hermes: HermesCLI, hermes_root: Path, tmp_path: Path, env: None) -> None:
    rounds, per_round = 15, 3

    def manifest(version: int) -> Path:
        return write_fleet(
            tmp_path / "m",
            [
                {
                    "name": "alpha",
                    "title": "Alpha",
                    "routines": [
                        {"name": "Changing", "schedule": "every 1h", "prompt": f"version {version}"},
                        {"name": "Steady", "schedule": "0 6 * * *", "prompt": "steady"},
                    ],
                }
            ],
        )

    ok(apply(manifest(0), hermes_root))
    version = 0
    for r in range(rounds):
        procs = [
            subprocess.Popen(
                [str(hermes.binary), "-p", "alpha", "cron", "create", "every 1h", f"x{r}-{i}", "--name", f"ext{r}-{i}"],
                env=hermes.env(),
                cwd=hermes.userhome,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for i in range(per_round)
        ]
        # Keep rewriting the store (a new prompt each time) until every Hermes writer has finished;
        # the short pause leaves the two-CPU CI runner room to start the Hermes processes.
        while True:
            done = all(p.poll() is not None for p in procs)
            version += 1
            ok(apply(manifest(version), hermes_root))
            if done:
                break
            time.sleep(0.05)
        for p in procs:
            out = p.communicate(timeout=60)[0]
            assert p.returncode == 0 and "Failed" not in out, out

    names = [j["name"] for j in jobs(hermes_root, "alpha")]
    expected = {f"ext{r}-{i}" for r in range(rounds) for i in range(per_round)}
    assert sorted(n for n in names if n.startswith("ext")) == sorted(expected)
    assert names.count("[bot:alpha] Changing") == 1 and names.count("[bot:alpha] Steady") == 1
    assert len(names) == len(expected) + 2
    (changing,) = [j for j in jobs(hermes_root, "alpha") if j["name"] == "[bot:alpha] Changing"]
    assert f"version {version}" in changing["prompt"]
    ext = next(j for j in jobs(hermes_root, "alpha") if j["name"] == "ext0-0")
    assert ext["prompt"] == "x0-0" and ext["schedule"]["display"] == "every 60m"
    assert_converged(manifest(version), hermes_root)
    assert len(listed(hermes, "alpha")) == len(expected) + 2


def test_default_toolsets_are_what_hermes_gives_an_unpinned_platform(hermes) -> None:
    """The plan insights compare a pin against Hermes' own default set (controller.hermes.capabilities)."""
    import json

    from controller.hermes.capabilities import default_toolsets
    from controller.hermes.platforms import PLATFORMS_0_19

    code = (
        "import json\n"
        "from hermes_cli.tools_config import _get_platform_tools\n"
        f"print(json.dumps({{p: sorted(_get_platform_tools({{}}, p)) for p in {list(PLATFORMS_0_19)!r}}}))\n"
    )
    out = hermes.python(code).stdout.strip().splitlines()[-1]
    resolved = json.loads(out)
    assert set(resolved) == set(PLATFORMS_0_19)
    for platform, toolsets in resolved.items():
        assert set(toolsets) - {"kanban"} == default_toolsets(platform), platform


def test_a_routine_is_the_record_hermes_cron_create_writes(
    hermes: HermesCLI, hermes_root: Path, tmp_path: Path, env: None
) -> None:
    """`hermes cron create --name '[bot:alpha] Digest' <schedule> <instruction>` in alpha's store, and
    the same routine applied: the same keys, and equal on every managed field (the prompt is the bare
    instruction, no delegation). Then apply --adopt takes Hermes' own job over with no change."""
    instruction = "Summarize the 'news' in three lines"
    routine = {"name": "Digest", "schedule": "0 9 * * 1-5", "prompt": instruction, "repeat": 3, "skills": ["notes"]}
    bots = [{"name": "alpha", "title": "Alpha", "routines": [routine]}, {"name": "beta", "title": "Beta"}]
    manifest = write_fleet(tmp_path / "m", bots)
    ok(apply(manifest, hermes_root))
    ours = next(j for j in jobs(hermes_root, "alpha") if j["name"] == "[bot:alpha] Digest")
    assert ours["prompt"] == instruction
    assert listed(hermes, "alpha")[ours["id"]]["Name"] == "[bot:alpha] Digest"

    made = hermes.run(  # in beta's store, so the two records sit side by side
        "cron", "create", "--name", "[bot:alpha] Digest", "--repeat", "3", "--skill", "notes", "0 9 * * 1-5", instruction,
        profile="beta",
    ).stdout  # fmt: skip
    assert "Created job:" in made, made
    (theirs,) = jobs(hermes_root, "beta")
    assert list(theirs) == list(ours)  # the same keys, in Hermes' order
    assert routines_core.live_fields(theirs) == routines_core.live_fields(ours)

    # Hermes' own record, adopted: nothing to change on any managed field.
    (profile(hermes_root, "alpha") / "cron" / "jobs.json").write_text(json.dumps({"jobs": [theirs]}), encoding="utf-8")
    (inventory,) = (hermes_root / ".hermes-fleet" / "inventory").glob("*.json")
    data = json.loads(inventory.read_text(encoding="utf-8"))
    del data["objects"]["routine/alpha/Digest"]
    inventory.write_text(json.dumps(data), encoding="utf-8")
    ok(apply(manifest, hermes_root, "--adopt"))
    (adopted,) = jobs(hermes_root, "alpha")
    assert adopted == theirs
    assert_converged(manifest, hermes_root)
