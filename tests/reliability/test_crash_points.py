"""Crash safety: kill `apply` at every write point in turn, then check the home and converge it.

For three runs of the realistic fleet (scenario.py) — the first apply that adopts a profile real
Hermes made, the update run v1 -> v2 with --prune, and the rename run v1 -> v3 (bot alpha renamed
to scout: one folder rename, then the marker, the cron store, the inventory) — the write points of an uninterrupted apply
are counted (fsio.WRITE_HOOKS fires once before every rename that publishes a file or a folder).
Then, for every k in 1..N, a fresh copy of the home gets an apply in a subprocess whose hook calls
`os._exit(137)` at write point k, and:

* every JSON / YAML / .env / SQLite file under the home parses;
* every file is byte-identical to its version before the run (for a renamed profile's files, the
  version under the old name) or after an uninterrupted run; a file
  whose uninterrupted content is not reproducible (timestamps, fresh job ids: the files that differ
  between two uninterrupted runs) must be byte-identical to its old version or to bytes that this
  very run staged in full (logged by the hook just before publishing);
* nothing of the home is lost: a file of the old home is missing only if the new home lacks it too;
* the only debris is the one temp file (or staging folder) of write point k, listed in the report;
* the next apply exits 0, a plan afterwards has no changes, status shows no drift, the home then
  equals the uninterrupted result, and the hand-made cron job and foreign ui_meta namespaces are there.

The raising variant runs in-process: an OSError(EIO) at write point k gives exit 1 (the
partial-failure path, or a clean error for the inventory write), never a traceback, and the next
apply converges.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import fsio, obscache
from tests.integration.helpers import hermes_fleet
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

STAMP = re.compile(r"\d{8}T\d{6}Z-")
STAGING = re.compile(r"profiles/\.([a-z0-9][a-z0-9_-]*)\.staging-\d+")
UNHOOKED = ("state.db", "state.db-wal", "state.db-shm", "apply.lock")  # not written through fsio
REPORT: dict[str, Any] = {}


def norm(rel: str) -> str:
    return STAGING.sub(r"profiles/\1", STAMP.sub("STAMP-", rel))


def normalized(root: Path) -> dict[str, bytes]:
    out = {}
    debris = scenario.leftovers(root)
    for rel, data in scenario.files(root).items():
        if any(rel == x or rel.startswith(x) for x in debris):
            continue
        out[norm(rel)] = data
    return out


@dataclass
class Run:
    name: str
    before: Path
    manifest: Path
    flags: tuple[str, ...]
    env: dict[str, str]
    after: dict[str, bytes] = field(default_factory=dict)
    volatile: set[str] = field(default_factory=set)
    points: list[str] = field(default_factory=list)

    def args(self, home: Path) -> list[str | Path]:
        return ["apply", "-f", self.manifest, "--home", home, *self.flags]


def reference(run: Run, scratch: Path) -> Run:
    """Two uninterrupted applies: the after-versions, which files are not reproducible, the write points."""
    results = []
    for label in ("a", "b"):
        home = scenario.copy_home(run.before, scratch / f"{run.name}-ref-{label}")
        log = scratch / f"{run.name}-ref-{label}.log"
        done = scenario.run_cli(run.args(home), run.env, hook="count", log=log)
        assert done.returncode == 0, done.stdout + done.stderr
        assert scenario.leftovers(home) == []
        results.append((home, log))
        time.sleep(1.1)  # so every timestamp (second resolution too) differs between a and b
    (home_a, log_a), (home_b, _) = results
    run.after = normalized(home_a)
    after_b = normalized(home_b)
    assert set(run.after) == set(after_b)
    run.volatile = {rel for rel in run.after if run.after[rel] != after_b[rel]}
    run.points = [norm(str(Path(line.split("\t")[1]).relative_to(home_a))) for line in log_a.read_text().splitlines()]
    return run


def check_crashed(run: Run, home: Path, log: Path, k: int, intermediate: list[str]) -> list[str]:
    """The state a kill at write point k left; returns its debris (intermediate versions go to the list)."""
    old = normalized(run.before)
    moved = {f"profiles/{scenario.RENAMED[1]}/" + rel.split("/", 2)[2]: data for rel, data in old.items()
             if rel.startswith(f"profiles/{scenario.RENAMED[0]}/")}  # fmt: skip
    staged: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        n, target, sha = line.split("\t")
        if int(n) < k:
            staged.setdefault(norm(str(Path(target).relative_to(home))), set()).add(sha)
    debris = scenario.leftovers(home)
    now = normalized(home)
    for rel, data in now.items():
        path = home / rel if (home / rel).exists() else None
        if path is not None:
            scenario.parse_file(path)
        if old.get(rel) == data or run.after.get(rel) == data or (rel not in old and moved.get(rel) == data):
            continue
        if Path(rel).name in UNHOOKED:
            continue
        # Not reproducible (timestamps, ids), or an intermediate version of a file written twice in
        # one run (a new profile's .env: staged header first, then the keys): either way it must be
        # bytes this very run staged in full before the kill.
        assert scenario.digest(data) in staged.get(rel, set()), (
            f"write point {k}: {rel} is neither its old version, nor its new one, nor bytes this run staged in full"
        )
        if rel not in run.volatile:
            intermediate.append(rel)
    for path in sorted(home.rglob("*")):  # parse the raw tree too (staged names included)
        if path.is_file() and not path.is_symlink():
            scenario.parse_file(path)
    lost = sorted(rel for rel in old if rel not in now and rel in run.after)
    assert not lost, f"write point {k}: files of the old home are gone: {lost}"
    assert len(debris) <= 1, f"write point {k}: more than one staging leftover: {debris}"
    return debris


def check_converged(run: Run, home: Path, k: int) -> None:
    again, plan, status = scenario.run_many(
        [
            run.args(home),
            ["plan", "-f", run.manifest, "--home", home, *run.flags, "--detailed-exitcode"],
            ["status", "-f", run.manifest, "--home", home, "-o", "json"],
        ],
        run.env,
    )
    assert again["code"] == 0, f"write point {k}: the next apply failed\n{again['out']}\n{again['err']}"
    assert plan["code"] == 0, f"write point {k}: not converged\n{plan['out']}\n{plan['err']}"
    assert status["code"] == 0, status["out"] + status["err"]
    (fleet,) = json.loads(status["out"])["fleets"]
    assert fleet["drifted"] == 0, f"write point {k}: status shows drift after convergence: {fleet['objects']}"
    now = normalized(home)
    assert set(now) == set(run.after), (
        f"write point {k}: files differ from the uninterrupted result: "
        f"extra {sorted(set(now) - set(run.after))}, missing {sorted(set(run.after) - set(now))}"
    )
    for rel, data in now.items():
        if rel not in run.volatile and Path(rel).name not in UNHOOKED:
            assert data == run.after[rel], f"write point {k}: {rel} differs from the uninterrupted result"
    for bot in ("alpha", "beta", "legacy", "gamma", "delta", scenario.RENAMED[1]):
        store = f"profiles/{bot}/cron/jobs.json"
        if store in run.after:
            names = Counter(scenario.job_names(home, bot))
            want = Counter(j.get("name") for j in json.loads(run.after[store])["jobs"])
            assert names == want, f"write point {k}: cron jobs of {bot}: {names} != {want}"
    assert scenario.HAND_JOB in scenario.job_names(home, "legacy")
    old, new = scenario.RENAMED
    if (run.before / "profiles" / old).is_dir() and not (home / "profiles" / old).exists():
        # A rename, however it was cut short, keeps every job id of the old profile.
        assert scenario.job_ids(home, new) == scenario.job_ids(run.before, old), f"write point {k}: job ids changed"
        names = scenario.job_names(home, new)
        assert f"[bot:{new}] From Desktop" in names and not any(f"[bot:{old}]" in str(n) for n in names), names
        assert (home / "active_profile").read_text() == new + "\n"
        hosts = json.loads((home / "honcho.json").read_text())["hosts"]
        assert set(hosts) == {f"hermes_{new}", "hermes"}, f"write point {k}: {hosts}"
    meta = scenario.ui_meta(home, "legacy")
    for ns, value in scenario.FOREIGN_UI_META.items():
        assert meta.get(ns) == value, f"write point {k}: ui_meta[{ns!r}] lost"


def crash_at(run: Run, scratch: Path, k: int) -> dict[str, Any]:
    home = scenario.copy_home(run.before, scratch / f"{run.name}-k{k}")
    log = scratch / f"{run.name}-k{k}.log"
    crashed = scenario.run_cli(run.args(home), run.env, hook="exit", hook_at=k, log=log)
    assert crashed.returncode == 137, f"write point {k}: {crashed.returncode}\n{crashed.stdout}\n{crashed.stderr}"
    intermediate: list[str] = []
    debris = check_crashed(run, home, log, k, intermediate)
    check_converged(run, home, k)
    still = [d for d in debris if (home / d.rstrip("/")).exists()]
    return {"k": k, "point": run.points[k - 1], "debris": debris, "debris_after_next_apply": still, "intermediate": intermediate}


def runs(p: Pristine, cache: str = "cache") -> list[Run]:
    """The three runs; with cache="no-cache" every run reads the home in full (HERMES_FLEET_NO_CACHE)."""
    env = {k: v for k, v in p.env.items() if k != obscache.NO_CACHE_ENV}
    if cache == "no-cache":
        env[obscache.NO_CACHE_ENV] = "1"
    return [
        Run("first-adopt", p.base_root, p.v1, ("--adopt",), env),
        Run("update-prune", p.root, p.v2, ("--prune",), env),
        Run("rename", p.root, p.v3, (), env),
    ]


CACHE_MODES = pytest.mark.parametrize("cache", ["cache", "no-cache"])  # the observation cache on and off: they agree


@CACHE_MODES
@pytest.mark.parametrize("which", [0, 1, 2], ids=["first-adopt", "update-prune", "rename"])
def test_kill_at_every_write_point(pristine: Pristine, tmp_path: Path, which: int, cache: str) -> None:
    run = reference(runs(pristine, cache)[which], tmp_path)
    n = len(run.points)
    if run.name == "rename":
        assert f"profiles/{scenario.RENAMED[1]}" in run.points, run.points  # the folder rename is a write point
    else:
        assert n >= 10, run.points  # the scenario really writes: profiles, routines, avatar, backup, inventory
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda k: crash_at(run, tmp_path, k), range(1, n + 1)))
    REPORT[run.name] = {"write_points": n, "outcomes": outcomes}
    (tmp_path / "crash-report.json").write_text(json.dumps(REPORT, indent=1))
    # Debris is only ever the temp file / staging folder of the write that was killed, and the next
    # apply sweeps it: it can prove the debris is a dead hermes-fleet run's own (fsio.dead_pid).
    for outcome in outcomes:
        for item in outcome["debris"]:
            assert item.endswith((".tmp", "/")), outcome
        assert outcome["debris_after_next_apply"] == [], outcome
    REPORT[run.name]["killed_with_debris"] = sum(1 for o in outcomes if o["debris"])


def term_at(run: Run, scratch: Path, k: int) -> dict[str, Any]:
    home = scenario.copy_home(run.before, scratch / f"{run.name}-term-k{k}")
    log = scratch / f"{run.name}-term-k{k}.log"
    stopped = scenario.run_cli(run.args(home), run.env, hook="term", hook_at=k, log=log)
    out = stopped.stdout + stopped.stderr
    assert stopped.returncode == 143, f"write point {k}: exit {stopped.returncode}\n{out}"
    assert "interrupted (SIGTERM)" in stopped.stderr and "Traceback" not in out, out
    debris = scenario.leftovers(home)
    assert debris == [], f"write point {k}: SIGTERM left {debris}"
    for path in sorted(home.rglob("*")):
        if path.is_file() and not path.is_symlink():
            scenario.parse_file(path)
    check_converged(run, home, k)
    return {"k": k, "point": run.points[k - 1]}


@CACHE_MODES
@pytest.mark.parametrize("which", [0, 1, 2], ids=["first-adopt", "update-prune", "rename"])
def test_sigterm_at_every_write_point_cleans_up_like_sigint(pristine: Pristine, tmp_path: Path, which: int, cache: str) -> None:
    """SIGTERM at write point k: the write in progress removes its temp file, a half-built profile its
    staging folder (exit 143, like SIGINT's cleanup); nothing to sweep, and the next apply converges."""
    run = reference(runs(pristine, cache)[which], tmp_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda k: term_at(run, tmp_path, k), range(1, len(run.points) + 1)))
    assert len(outcomes) == len(run.points)


@CACHE_MODES
@pytest.mark.parametrize("which", [0, 1, 2], ids=["first-adopt", "update-prune", "rename"])
def test_io_error_at_every_write_point(
    pristine: Pristine, tmp_path: Path, which: int, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    """In-process: OSError(EIO) at write k -> exit 1 with a message, no traceback; next apply converges."""
    import errno
    import os

    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("HERMES_")]:
        monkeypatch.delenv(key)
    run = runs(pristine, cache)[which]
    if cache == "no-cache":  # in-process too
        monkeypatch.setenv(obscache.NO_CACHE_ENV, "1")
    count = scenario.run_cli(
        run.args(scenario.copy_home(run.before, tmp_path / "count")), run.env, hook="count", log=tmp_path / "count.log"
    )
    assert count.returncode == 0
    n = len((tmp_path / "count.log").read_text().splitlines())
    for k in range(1, n + 1):
        home = scenario.copy_home(run.before, tmp_path / f"k{k}")
        calls = [0]

        def hook(target: Path, k: int = k, calls: list[int] = calls) -> None:
            calls[0] += 1
            if calls[0] == k:
                raise OSError(errno.EIO, "injected I/O error", str(target))

        fsio.WRITE_HOOKS.append(hook)
        try:
            failed = hermes_fleet(*run.args(home))
        finally:
            fsio.WRITE_HOOKS.remove(hook)
        assert failed.code == 1, f"write point {k}: exit {failed.code}\n{failed.text}"
        assert "Traceback" not in failed.text
        assert "injected I/O error" in failed.text, failed.text
        assert scenario.leftovers(home) == [], f"write point {k}: an error (not a kill) leaves no debris"
        again = hermes_fleet(*run.args(home))
        assert again.code == 0, f"write point {k}: {again.text}"
        plan = hermes_fleet("plan", "-f", run.manifest, "--home", home, *run.flags, "--detailed-exitcode")
        assert plan.code == 0, f"write point {k}: {plan.text}"
        assert scenario.HAND_JOB in scenario.job_names(home, "legacy")
        assert all(scenario.ui_meta(home, "legacy").get(ns) == v for ns, v in scenario.FOREIGN_UI_META.items())
