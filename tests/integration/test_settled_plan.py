"""The settled plan (adapters/settled.py, adapters/inputtrace.py, verbs/fastplan.py): after a
converged apply, `plan` prints what it printed then, without validating or observing, only while
every input of that plan is unchanged; any change to a file it read, a folder it listed, the
environment, the manifests or its arguments plans in full.

Whether a plan was answered from the memo is seen directly: `make_plan` (the full plan) is
replaced by one that fails, so only a replayed plan can succeed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from controller import cli
from controller.adapters import inputtrace, settled
from controller.verbs import fastplan
from controller.verbs import plan as plan_verb
from tests.integration.helpers import apply, changes, hermes_fleet, plan, write_fleet

BOT = {"name": "alpha", "title": "One", "config": {"agent.max_turns": 12}, "env": {"OR_KEY": {"from_env": "OR_KEY"}}}


class FullPlan(Exception):
    pass


@pytest.fixture
def settled_home(home: Path, manifests: Path) -> Path:
    manifest = write_fleet(manifests, [BOT, {"name": "beta", "title": "Two"}])
    assert apply(manifest, home).code == 0
    time.sleep(0.05)  # past the tick of the first apply's writes: they are not racy any more
    assert apply(manifest, home).code == 0
    assert settled.path_of(home).is_file()
    assert oct(settled.path_of(home).stat().st_mode & 0o777) == "0o600"
    return manifest


def replayed(manifest: Path, home: Path, *flags: str) -> bool:
    """True when the plan was answered from the settled plan."""
    original = plan_verb.make_plan

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise FullPlan

    plan_verb.make_plan = refuse
    try:
        run = plan(manifest, home, *flags)
    except FullPlan:
        return False
    finally:
        plan_verb.make_plan = original
    assert run.code == 0, run.text
    return True


def test_every_argument_of_plan_is_an_input_a_view_or_a_switch() -> None:
    names = set(vars(cli.build_parser().parse_args(["plan", "-f", "x.yaml"])))
    groups = [set(fastplan.PLAN_INPUTS), set(fastplan.RENDER_ONLY), set(fastplan.OFF)]
    assert names == set().union(*groups), "a new argument of plan: add it to PLAN_INPUTS, RENDER_ONLY or OFF"
    assert sum(len(g) for g in groups) == len(names)


def test_a_settled_home_is_answered_from_the_memo_with_the_full_plans_output(settled_home: Path, home: Path) -> None:
    for flags in [(), ("-q",), ("--detail",), ("-o", "json"), ("--detailed-exitcode",), ("--deny-widening",)]:
        full = plan(settled_home, home, "--no-cache", *flags)
        assert replayed(settled_home, home, *flags), flags
        again = plan(settled_home, home, *flags)
        assert (again.code, again.out, again.err) == (full.code, full.out, full.err), flags
    assert "No changes" in plan(settled_home, home).out
    where = ("plan", "-f", settled_home, "--home", home)
    coloured = hermes_fleet("--color", "always", *where)
    assert "\033[" in coloured.out
    assert coloured.out == hermes_fleet("--color", "always", *where, "--no-cache").out


def test_the_memo_holds_no_secret_and_no_environment(settled_home: Path, home: Path) -> None:
    from tests.integration.conftest import SECRET_OR

    text = settled.path_of(home).read_text()
    assert SECRET_OR not in text
    assert os.environ["HOME"] not in json.loads(text)["process"]


@pytest.mark.parametrize(
    "edit",
    [
        "config_same_size_same_mtime",
        "env_file",
        "new_profile",
        "removed_config",
        "manifest",
        "inventory",
        "suspended",
    ],
)
def test_any_change_to_an_input_plans_in_full(settled_home: Path, home: Path, edit: str) -> None:
    alpha = home / "profiles" / "alpha"
    if edit == "config_same_size_same_mtime":
        path = alpha / "config.yaml"
        before = path.stat()
        path.write_text(path.read_text().replace("max_turns: 12", "max_turns: 13"))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    elif edit == "env_file":
        (alpha / ".env").write_text("OR_KEY=another\n")
    elif edit == "new_profile":
        (home / "profiles" / "gamma").mkdir()
    elif edit == "removed_config":
        (home / "profiles" / "beta" / "config.yaml").unlink()
    elif edit == "manifest":
        settled_home.write_text(settled_home.read_text().replace("title: Two", "title: Too"))
    elif edit == "inventory":
        inventory = next((home / ".hermes-fleet" / "inventory").glob("*.json"))
        inventory.write_text(inventory.read_text() + " ")
    elif edit == "suspended":
        assert hermes_fleet("suspend", "--home", home, "--reason", "test").code == 0
    assert not replayed(settled_home, home)
    assert plan(settled_home, home).out == plan(settled_home, home, "--no-cache").out


def test_an_edit_in_the_tick_of_the_memo_is_caught_by_its_digest(settled_home: Path, home: Path) -> None:
    """A file whose timestamp is within the tick of its record is racy: the memo keeps its digest,
    and an edit that keeps its whole stat key is still seen. The racy file is made by dating
    config.yaml ahead; the edit within the tick by giving the memo's record the edited file's key
    (what an edit in the tick of the record would leave)."""
    config = home / "profiles" / "alpha" / "config.yaml"
    ahead = time.time_ns() + 5_000_000_000
    os.utime(config, ns=(ahead, ahead))
    assert apply(settled_home, home).code == 0
    memo = settled.load(home)
    assert memo is not None
    records = [r for r in memo.records if r[1] == str(config)]
    assert records and all(r[3] for r in records), "a racy file carries a digest"
    config.write_text(config.read_text().replace("max_turns: 12", "max_turns: 13"))
    os.utime(config, ns=(ahead, ahead))

    def now(kind: str) -> inputtrace.Key:
        return inputtrace.key_of(config.lstat() if kind == inputtrace.LSTAT else config.stat(), kind)

    forged = [(k, p, now(k) if p == str(config) else key, d) for k, p, key, d in memo.records]
    settled.save(home, settled.Settled(memo.params, memo.process, memo.code, memo.salt, forged, memo.outputs))
    assert not replayed(settled_home, home)
    assert "bot/alpha" in changes(settled_home, home)


def test_a_changed_environment_or_argument_plans_in_full(settled_home: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert replayed(settled_home, home)
    assert not replayed(settled_home, home, "--prune")
    assert not replayed(settled_home, home, "--hermes-version", "0.19.0")
    monkeypatch.setenv("OR_KEY", "sk-or-rotated")
    assert not replayed(settled_home, home)
    assert "bot/alpha" in changes(settled_home, home)


def test_no_cache_and_the_environment_switch_plan_in_full(
    settled_home: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not replayed(settled_home, home, "--no-cache")
    monkeypatch.setenv("HERMES_FLEET_NO_CACHE", "1")
    assert not replayed(settled_home, home)


def test_a_plan_that_ran_a_command_is_not_kept(home: Path, manifests: Path) -> None:
    bot = {"name": "alpha", "env": {"TOKEN": {"from_command": ["printf", "tok"]}}}
    manifest = write_fleet(manifests, [bot])
    assert apply(manifest, home).code == 0
    assert not settled.path_of(home).exists()


def test_a_dry_run_keeps_nothing(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT])
    assert apply(manifest, home).code == 0
    settled.path_of(home).unlink()
    (home / "profiles" / "alpha" / "config.yaml").write_text("agent: {max_turns: 99}\n")
    assert apply(manifest, home, "--dry-run").code == 0
    assert not settled.path_of(home).exists()


@pytest.mark.parametrize(
    "damage",
    ['{"kind": "hermes-fleet-settled-plan"}', "not json", "", '{"records": [["f", "relative", null, ""]]}'],
)
def test_a_damaged_memo_is_ignored(settled_home: Path, home: Path, damage: str) -> None:
    settled.path_of(home).write_text(damage)
    assert not replayed(settled_home, home)
    assert "No changes" in plan(settled_home, home).out


def test_a_forged_record_is_ignored(settled_home: Path, home: Path) -> None:
    data = json.loads(settled.path_of(home).read_text())
    data["records"][0][2] = ["x"] * 8
    settled.path_of(home).write_text(json.dumps(data))
    assert settled.load(home) is None


def test_plan_with_the_memo_writes_nothing(settled_home: Path, home: Path) -> None:
    from tests.integration.helpers import snapshot

    before = snapshot(home)
    assert replayed(settled_home, home)
    assert snapshot(home) == before


def test_a_trace_records_reads_listings_and_looks_and_is_tainted_by_a_process(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "a.txt").write_text("a")
    with inputtrace.tracing() as trace:
        (tmp_path / "a.txt").read_text()
        os.listdir(tmp_path)
        (tmp_path / "absent").exists()
        os.path.exists("")  # names no file: not the working folder
    assert ("s", os.getcwd()) not in trace.records
    kinds = {(k, Path(p).name) for k, p in trace.records}
    assert {("f", "a.txt"), ("d", tmp_path.name), ("s", "absent")} <= kinds
    assert not trace.tainted
    records = [(k, p, r.key, r.digest) for (k, p), r in trace.records.items()]
    assert inputtrace.unchanged(records)
    (tmp_path / "absent").write_text("here now")
    assert not inputtrace.unchanged(records)
    with inputtrace.tracing() as trace:
        with pytest.raises(inputtrace.Busy), inputtrace.tracing():  # one at a time: a second apply goes without
            pass
        subprocess.run(["true"], check=True)
    assert trace.tainted == "a process was started"
    assert os.stat is inputtrace._stat, "the wrappers are gone after the trace"


def test_hermes_on_path_is_asked_once_and_vouched_for_by_its_metadata_folder(
    home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the real hermes 0.19.0 on PATH its version is asked of its Python (a child process);
    the settled plan is still kept, keyed by the interpreter and the folder of hermes-agent's
    metadata that the probe names, and a different `hermes` on PATH plans in full."""
    from tests.hermes_support import require_hermes

    real = require_hermes()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hermes").symlink_to(real)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    manifest = write_fleet(manifests, [BOT])
    assert apply(manifest, home).code == 0
    time.sleep(0.05)
    assert apply(manifest, home).code == 0
    memo = settled.load(home)
    assert memo is not None, "the probe is vouched for: the plan is kept"
    folders = {p for k, p, _, _ in memo.records if k == inputtrace.FOLDER}
    assert any(p.endswith(".dist-info") and "hermes_agent-0.19.0" in p for p in folders), folders
    assert replayed(manifest, home)
    assert "Hermes version unknown" not in plan(manifest, home).out
    (bin_dir / "hermes").unlink()
    (bin_dir / "hermes").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "hermes").chmod(0o755)
    assert not replayed(manifest, home)


def test_a_file_a_manifest_names_is_an_input_whatever_its_name(home: Path, manifests: Path) -> None:
    """Only the interpreter's and hermes-fleet's own files are left out of the trace (imports),
    not files by their suffix: a soul file named `soul.py` is an input like any other."""
    (manifests / "soul.py").write_text("You are calm.\n")
    manifest = write_fleet(manifests, [{"name": "alpha", "soul_file": "soul.py"}])
    assert apply(manifest, home).code == 0
    time.sleep(0.05)
    assert apply(manifest, home).code == 0
    assert replayed(manifest, home)
    (manifests / "soul.py").write_text("You are loud.\n")
    assert not replayed(manifest, home)
    assert "bot/alpha" in changes(manifest, home)


def test_a_link_planted_where_the_fence_looked_is_refused_as_in_a_full_plan(settled_home: Path, home: Path) -> None:
    """The observation cache's containment hit stands for a folder's entries by its mtime: the
    trace keys those folders in full, so a link planted in one is seen (exit 3), not replayed."""
    (home / "profiles" / "alpha" / "state.db-shm").symlink_to("/etc/passwd")
    assert not replayed_or_refused(settled_home, home)
    full = plan(settled_home, home, "--no-cache")
    assert full.code == 3
    assert (plan(settled_home, home).code, plan(settled_home, home).err) == (full.code, full.err)


def replayed_or_refused(manifest: Path, home: Path) -> bool:
    try:
        return replayed(manifest, home)
    except AssertionError:
        return False


BOT_FILE = "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {{name: {name}, fleet: acme}}\nspec: {{}}\n"


def test_a_fleet_in_several_files_is_kept(home: Path, manifests: Path) -> None:
    """The parse of several files may fork a child, after a look at /proc: the traced plan parses
    in one process (manifests/parallel.py `in_one_process`), so such a fleet is kept too."""
    write_fleet(manifests, [BOT])
    (manifests / "beta.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {name: beta, fleet: acme}\nspec: {}\n"
    )
    assert apply(manifests, home).code == 0, apply(manifests, home).text
    time.sleep(0.05)
    assert apply(manifests, home).code == 0
    assert settled.path_of(home).is_file()
    assert replayed(manifests, home)
    (manifests / "gamma.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {name: gamma, fleet: acme}\nspec: {}\n"
    )
    assert not replayed(manifests, home)
    assert "bot/gamma" in changes(manifests, home)


def test_a_whole_second_timestamp_is_racy_for_two_seconds() -> None:
    """On a file system that keeps whole seconds, a file written at 100.1 s has mtime 100.0 s: read
    at 100.8 s it may still change in the same second without changing its key."""
    second = 1_800_000_100 * 1_000_000_000
    coarse: inputtrace.Key = (1, 2, 3, second, second, 0o100600, 0, 0)
    fine: inputtrace.Key = (1, 2, 3, second + 123, second + 123, 0o100600, 0, 0)
    assert inputtrace.is_racy(coarse, second + 800_000_000)
    assert not inputtrace.is_racy(coarse, second + 2_500_000_000)
    assert not inputtrace.is_racy(fine, second + 800_000_000)


@pytest.mark.parametrize("record", [["s", "/tmp/a\u0000b", None, ""], ["f", "/x", [1, 2, 3, 4, 5, 6, 7, -8], ""]])
def test_a_memo_with_a_bad_record_is_ignored_without_a_traceback(settled_home: Path, home: Path, record: list[Any]) -> None:
    data = json.loads(settled.path_of(home).read_text())
    data["records"].append(record)
    settled.path_of(home).write_text(json.dumps(data))
    run = plan(settled_home, home)
    assert run.code == 0 and "Traceback" not in run.text and "No changes" in run.out
    assert not replayed(settled_home, home)


def test_manifests_from_stdin_keep_nothing(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io as stdio
    import sys

    manifest = write_fleet(manifests, [{"name": "alpha"}])
    monkeypatch.setattr(sys, "stdin", stdio.TextIOWrapper(stdio.BytesIO(manifest.read_bytes())))
    assert hermes_fleet("apply", "-f", "-", "--home", home).code == 0
    assert not settled.path_of(home).exists()


def test_a_fleet_above_the_limit_keeps_no_settled_plan(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SETTLE_MAX_BOTS the apply keeps no settled plan (its own plan would cost the apply a
    third more time and memory at 10,000 bots); its next plan plans in full."""
    monkeypatch.setattr(plan_verb, "SETTLE_MAX_BOTS", 1)
    manifest = write_fleet(manifests, [BOT, {"name": "beta"}])
    assert apply(manifest, home).code == 0
    assert not settled.path_of(home).exists()
    monkeypatch.setattr(plan_verb, "SETTLE_MAX_BOTS", 2)
    assert apply(manifest, home).code == 0
    assert settled.path_of(home).exists()
