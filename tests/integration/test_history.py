"""History and rollback, end to end on real files: apply A, apply B, look at the history, roll back.

Every run is the real CLI (in-process) on a temporary Hermes home; the rolled-back home is read by
the real hermes-agent 0.19.0 (tests/effect/hermes_probe.py, Hermes' own loaders) where it matters.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import history as store
from tests.hermes_support import INSTALL_HINT, HermesCLI, hermes_bin
from tests.integration.conftest import SECRET_OR
from tests.integration.helpers import (
    all_text_under,
    apply,
    assert_converged,
    hermes_fleet,
    profile,
    read_yaml,
    snapshot,
    tiny_png,
    write_fleet,
)

PROBE = Path(__file__).resolve().parents[1] / "effect" / "hermes_probe.py"
HAND_SECRET = "sk-hand-EDITED-5150"


def fleet_a(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "soul.md").write_text("You are Alpha, version A.\n")
    (folder / "face.png").write_bytes(tiny_png((10, 200, 10)))
    bots = [
        {
            "name": "alpha",
            "title": "Alpha",
            "model": {"provider": "openrouter", "default": "model-a"},
            "soul_file": "soul.md",
            "avatar": {"image": "face.png"},
            "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}},
            "routines": [{"name": "digest", "schedule": "0 8 * * *", "prompt": "Digest A"}],
        },
        {"name": "beta", "model": {"default": "model-a"}},
    ]
    return write_fleet(folder, bots)


def fleet_b(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "soul.md").write_text("You are Alpha, version B.\n")
    bots = [
        {
            "name": "alpha",
            "title": "Alpha B",
            "model": {"provider": "openrouter", "default": "model-b"},
            "soul_file": "soul.md",
            "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}},
            "routines": [{"name": "digest", "schedule": "0 9 * * *", "prompt": "Digest B"}],
        },
        {"name": "beta", "model": {"default": "model-b"}},
        {"name": "gamma", "model": {"default": "model-b"}},
    ]
    return write_fleet(folder, bots)


def history_json(home: Path, *args: str) -> dict[str, Any]:
    run = hermes_fleet("history", *args, "--home", home, "-o", "json")
    assert run.code == 0, run.text
    data: dict[str, Any] = run.json()
    return data


def model_of(home: Path, bot: str) -> Any:
    return read_yaml(profile(home, bot) / "config.yaml")["model"]["default"]


def profiles_of(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "profiles").iterdir() if not p.name.startswith("."))


def history_files(home: Path) -> list[Path]:
    return sorted((home / ".hermes-fleet" / "history" / "acme").glob("*.json"))


@pytest.fixture
def hermes(tmp_path: Path) -> Path:
    """The real hermes 0.19.0 binary (skipped when absent, failed on CI)."""
    binary = hermes_bin()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    return binary


def probe(hermes: Path, home: Path, bot: str) -> dict[str, Any]:
    """What the real Hermes 0.19.0 resolves for `bot` under its HERMES_HOME (its own loaders)."""
    real = HermesCLI(hermes, home, home.parent / "hermes-user")
    done = subprocess.run(
        [str(real.python_bin), str(PROBE)], env=real.env(bot), capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture
def two_applies(home: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    a, b = fleet_a(tmp_path / "a"), fleet_b(tmp_path / "b")
    assert apply(a, home).code == 0
    run = apply(b, home)
    assert run.code == 0, run.text
    return home, a, b


def test_each_apply_is_an_entry_and_rollback_brings_back_a(two_applies: tuple[Path, Path, Path], hermes: Path) -> None:
    home, a, b = two_applies
    listed = history_json(home)
    assert [e["seq"] for e in listed["entries"]] == [1, 2]
    first, second = listed["entries"]
    assert first["counts"] == {"created": 3, "changed": 0, "deleted": 0, "failed": 0}  # 2 bots, 1 routine
    assert second["counts"]["created"] == 1 and second["counts"]["changed"] >= 2
    assert first["exit"] == 0 and "@" in first["who"] and first["command"] == "apply"
    assert first["source"]["digest"].startswith("sha256:") and first["source"]["files"] == [str(a)]
    assert first["desired"]["bots"] == ["alpha", "beta"] and second["desired"]["bots"] == ["alpha", "beta", "gamma"]
    text = hermes_fleet("history", "--home", home)
    assert text.code == 0 and text.out.splitlines()[0].split()[:2] == ["#", "WHEN"], text.text
    shown = hermes_fleet("history", "show", "1", "--home", home)
    assert shown.code == 0 and "alpha, beta" in shown.out and "rollback --to 1" in shown.out, shown.text

    # Rolling back deletes gamma (B added it): refused without --yes, nothing written.
    before = snapshot(home)
    refused = hermes_fleet("rollback", "--home", home)
    assert refused.code == 3, refused.text
    assert "bot/gamma" in refused.err and "--yes" in refused.err
    assert snapshot(home) == before

    done = hermes_fleet("rollback", "--home", home, "--yes")
    assert done.code == 0, done.text
    assert "Recorded as history entry 3." in done.out
    assert profiles_of(home) == ["alpha", "beta"]
    assert model_of(home, "alpha") == "model-a" and model_of(home, "beta") == "model-a"
    assert (profile(home, "alpha") / "SOUL.md").read_text() == "You are Alpha, version A.\n"
    assert (profile(home, "alpha") / "assets" / "avatar.png").read_bytes() == tiny_png((10, 200, 10))
    assert_converged(a, home)  # the home is exactly what A's manifests say again
    third = history_json(home, "show", "3")["entry"]
    assert third["command"] == "rollback" and third["source"]["rollback_of"] == 1
    assert third["counts"]["deleted"] == 1

    # The real Hermes reads A's settings from the rolled-back files.
    report = probe(hermes, home, "alpha")
    assert report["model"]["default"] == "model-a"
    assert report["soul"]["first_line"] == "You are Alpha, version A."
    jobs = json.loads((profile(home, "alpha") / "cron" / "jobs.json").read_text())["jobs"]
    assert [j["name"] for j in jobs] == ["[bot:alpha] digest"]
    assert "Digest A" in jobs[0]["prompt"] and jobs[0]["schedule"]["expr"] == "0 8 * * *"

    # rollback --to 2 goes forward to B again; the default after that goes back to A.
    again = hermes_fleet("rollback", "--to", "2", "--home", home)
    assert again.code == 0, again.text
    assert profiles_of(home) == ["alpha", "beta", "gamma"] and model_of(home, "alpha") == "model-b"
    assert_converged(b, home)
    dry = hermes_fleet("rollback", "--home", home, "--dry-run", "-o", "json")
    assert dry.code == 3 and dry.json()["kind"] == "dry-run", dry.text  # as the rollback itself (deletes gamma)
    dry = hermes_fleet("rollback", "--home", home, "--dry-run", "--yes", "-o", "json")
    assert dry.code == 0 and dry.json()["kind"] == "dry-run", dry.text
    assert model_of(home, "alpha") == "model-b"  # --dry-run wrote nothing
    assert probe(hermes, home, "alpha")["model"]["default"] == "model-b"


def test_no_secret_value_in_the_history(two_applies: tuple[Path, Path, Path]) -> None:
    home, _, _ = two_applies
    assert (profile(home, "alpha") / ".env").read_text().count(SECRET_OR) == 1  # it was applied
    state = home / ".hermes-fleet" / "history"
    assert SECRET_OR not in all_text_under(state)
    entry = json.loads(history_files(home)[0].read_text())
    bot = entry["desired"]["documents"][0]["data"]["spec"]["bots"][0]
    assert bot["env"] == {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}  # the reference, as written
    for path in history_files(home):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((state / "acme").stat().st_mode) == 0o700
    for args in (("history",), ("history", "show", "1"), ("history", "-o", "json"), ("history", "show", "2", "-o", "json")):
        run = hermes_fleet(*args, "--home", home)
        assert run.code == 0 and SECRET_OR not in run.text


def test_rollback_resolves_secrets_now_and_refuses_cleanly_when_one_is_missing(
    two_applies: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _, _ = two_applies
    monkeypatch.delenv("OR_KEY")
    before = snapshot(home)
    run = hermes_fleet("rollback", "--home", home, "--yes")
    assert run.code == 1, run.text
    assert "OR_KEY" in run.err and "nothing was changed" in run.err and "Traceback" not in run.text
    assert snapshot(home) == before
    assert [e["seq"] for e in history_json(home)["entries"]] == [1, 2]
    # A rotated key: the rollback writes the value the reference gives now.
    monkeypatch.setenv("OR_KEY", "sk-or-ROTATED-0001")
    assert hermes_fleet("rollback", "--home", home, "--yes").code == 0
    assert "OPENROUTER_API_KEY=sk-or-ROTATED-0001" in (profile(home, "alpha") / ".env").read_text()


def test_rollback_no_prune_keeps_what_the_entry_lacked(two_applies: tuple[Path, Path, Path]) -> None:
    home, _, _ = two_applies
    run = hermes_fleet("rollback", "--to", "1", "--no-prune", "--home", home)
    assert run.code == 0, run.text
    assert profiles_of(home) == ["alpha", "beta", "gamma"] and model_of(home, "alpha") == "model-a"


def test_a_dry_run_says_the_rollback_would_be_refused(two_applies: tuple[Path, Path, Path]) -> None:
    """Rolling back to entry 1 deletes gamma: the dry run shows the plan and exits 3 as the rollback would."""
    home, _, _ = two_applies
    before = snapshot(home)
    run = hermes_fleet("rollback", "--to", "1", "--dry-run", "--home", home)
    assert run.code == 3 and "this rollback would be refused" in run.err and "bot/gamma" in run.err, run.text
    assert snapshot(home) == before
    allowed = hermes_fleet("rollback", "--to", "1", "--dry-run", "--yes", "--home", home)
    assert allowed.code == 0 and snapshot(home) == before, allowed.text


def test_bad_rollback_targets_are_bad_input(two_applies: tuple[Path, Path, Path]) -> None:
    home, _, _ = two_applies
    for args, words in (
        (("rollback", "--to", "9"), "no history entry 9"),
        (("history", "show", "0"), "no history entry 0"),
        (("rollback", "--fleet", "other"), "no apply history"),
    ):
        run = hermes_fleet(*args, "--home", home)
        assert run.code == 2 and words in run.err, run.text
    empty = hermes_fleet("history", "--home", home.parent / "nowhere")
    assert empty.code == 2 and "no apply history" in empty.err


def test_hand_edits_are_kept_before_apply_overwrites_them(home: Path, tmp_path: Path) -> None:
    a = fleet_a(tmp_path / "a")
    assert apply(a, home).code == 0
    alpha = profile(home, "alpha")
    (alpha / "SOUL.md").write_text("Hand-written soul.\n")
    config = alpha / "config.yaml"
    config.write_text(config.read_text().replace("model-a", "model-by-hand"))
    env = alpha / ".env"
    env.write_text(env.read_text().replace(SECRET_OR, HAND_SECRET))
    untouched = profile(home, "beta") / "config.yaml"
    untouched_before = untouched.read_bytes()

    run = apply(a, home)
    assert run.code == 0, run.text
    assert HAND_SECRET not in run.text and SECRET_OR not in run.text
    assert "hand-edited file(s) were overwritten" in run.err and ".hermes-fleet/replaced/" in run.err
    (kept,) = sorted((home / ".hermes-fleet" / "replaced").iterdir())
    assert str(kept) in run.err
    copies = {str(p.relative_to(kept)): p for p in kept.rglob("*") if p.is_file()}
    assert set(copies) == {"profiles/alpha/SOUL.md", "profiles/alpha/config.yaml", "profiles/alpha/.env"}
    assert copies["profiles/alpha/SOUL.md"].read_text() == "Hand-written soul.\n"
    assert "model-by-hand" in copies["profiles/alpha/config.yaml"].read_text()
    assert HAND_SECRET in copies["profiles/alpha/.env"].read_text()
    for path in copies.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in [kept, *[p for p in kept.rglob("*") if p.is_dir()]]:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (alpha / "SOUL.md").read_text() == "You are Alpha, version A.\n"  # converged
    assert untouched.read_bytes() == untouched_before  # no drift there: nothing kept, nothing written
    latest = history_json(home)["entries"][-1]
    assert latest["replaced"] == str(kept)

    # Recovering is a copy back; the next plan then shows the hand edit as drift again.
    (alpha / "SOUL.md").write_bytes(copies["profiles/alpha/SOUL.md"].read_bytes())
    plan = hermes_fleet("plan", "-f", a, "--home", home, "-o", "json")
    (obj,) = [o for o in plan.json()["objects"] if o["name"] == "alpha"]
    assert any(f["field"] == "soul" and f["drift"] for f in obj["fields"])

    # Applying over the recovered edit keeps it again; an apply with no hand edit keeps nothing.
    assert apply(a, home).code == 0
    assert len(list((home / ".hermes-fleet" / "replaced").iterdir())) == 2
    quiet = apply(a, home)
    assert quiet.code == 0 and "overwritten" not in quiet.err
    assert len(list((home / ".hermes-fleet" / "replaced").iterdir())) == 2


def test_retention_bounds_history_and_kept_copies(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_FLEET_HISTORY_KEEP", "3")
    monkeypatch.setenv("HERMES_FLEET_REPLACED_KEEP", "2")
    a = fleet_a(tmp_path / "a")
    soul = profile(home, "alpha") / "SOUL.md"
    for i in range(5):
        if i:
            soul.write_text(f"hand edit {i}\n")
        run = apply(a, home)
        assert run.code == 0, run.text
    assert [p.name for p in history_files(home)] == ["000003.json", "000004.json", "000005.json"]
    assert [e["seq"] for e in history_json(home)["entries"]] == [3, 4, 5]
    kept = sorted((home / ".hermes-fleet" / "replaced").iterdir())
    assert [(k / "profiles/alpha/SOUL.md").read_text() for k in kept] == ["hand edit 3\n", "hand edit 4\n"]
    monkeypatch.setenv("HERMES_FLEET_HISTORY_KEEP", "zero")
    bad = apply(a, home)
    assert bad.code == 2 and "HERMES_FLEET_HISTORY_KEEP" in bad.err


def test_a_git_checkout_is_recorded_by_commit(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    a = fleet_a(repo / "fleet")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "A"], check=True)
    head = subprocess.run([*git[:3], "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    assert apply(a, home).code == 0
    (a.parent / "soul.md").write_text("uncommitted\n")
    assert apply(a, home).code == 0
    first, second = history_json(home)["entries"]
    assert first["source"]["revision"] == head and first["source"]["dirty"] is False
    assert second["source"]["revision"] == head and second["source"]["dirty"] is True
    assert f"git {head[:12]}+dirty" in hermes_fleet("history", "--home", home).out


def _logging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that logs its arguments and runs the real one."""
    real = subprocess.run(["sh", "-c", "command -v git"], check=True, capture_output=True, text=True).stdout.strip()
    folder, log = tmp_path / "bin", tmp_path / "git.log"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def test_manifests_outside_any_git_work_tree_start_no_git_process(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _logging_git(tmp_path, monkeypatch)
    assert not any((p / ".git").exists() for p in (tmp_path, *tmp_path.parents))
    assert apply(fleet_a(tmp_path / "plain"), home).code == 0
    assert not log.exists()
    assert history_json(home)["entries"][0]["source"]["revision"] is None
    # A linked work tree has a `.git` file, not a folder: git is asked, and the commit recorded.
    repo = tmp_path / "repo"
    fleet_a(repo / "fleet")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "A"], check=True)
    subprocess.run([*git[:3], "worktree", "add", "-q", str(tmp_path / "linked")], check=True)
    head = subprocess.run([*git[:3], "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    log.unlink()
    assert (tmp_path / "linked" / ".git").is_file()
    assert apply(tmp_path / "linked" / "fleet" / "fleet.yaml", home).code == 0
    assert "rev-parse --show-toplevel" in log.read_text()
    # The same manifests, applied with nothing to change: the newest entry is confirmed by this run.
    assert history_json(home)["entries"][-1]["confirmed"]["revision"] == head


def test_watch_records_only_runs_that_change_something_and_self_heal_keeps_hand_edits(home: Path, tmp_path: Path) -> None:
    a = fleet_a(tmp_path / "a")
    assert apply(a, home).code == 0
    once = ("watch", "-f", a, "--home", home, "--once", "--self-heal", "--interval", "1s")
    run = hermes_fleet(*once)
    assert run.code == 0, run.text
    assert len(history_files(home)) == 1  # in sync: nothing recorded
    soul = profile(home, "alpha") / "SOUL.md"
    soul.write_text("edited on the server\n")
    run = hermes_fleet(*once)
    assert run.code == 0, run.text
    assert soul.read_text() == "You are Alpha, version A.\n"
    entries = history_json(home)["entries"]
    assert [e["command"] for e in entries] == ["apply", "watch"]
    kept = Path(entries[-1]["replaced"])
    assert (kept / "profiles" / "alpha" / "SOUL.md").read_text() == "edited on the server\n"
    assert "replaced_kept" in run.text


def test_a_kill_while_the_history_entry_is_written_keeps_the_earlier_ones(home: Path, tmp_path: Path) -> None:
    """Kill apply (os._exit) at the write point that publishes the history entry: the earlier
    entries are intact, the only debris is that write's temp file, and the next apply sweeps it."""
    from tests.reliability import scenario

    a, b = fleet_a(tmp_path / "a"), fleet_b(tmp_path / "b")
    assert apply(a, home).code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    log = tmp_path / "count.log"
    probe_home = tmp_path / "probe-home"
    subprocess.run(["cp", "-a", str(home), str(probe_home)], check=True)
    counted = scenario.run_cli(["apply", "-f", b, "--home", probe_home], env, hook="count", log=log)
    assert counted.returncode == 0, counted.stderr
    points = [line.split("\t")[1] for line in log.read_text().splitlines()]
    (k,) = [i + 1 for i, target in enumerate(points) if "/.hermes-fleet/history/" in target]
    # The entry comes after the inventory; after it only the information-only writes (the
    # observation cache, the hand-edit baseline), whose failure must not cost the rollback point.
    assert any("/.hermes-fleet/inventory/" in target for target in points[: k - 1]), points
    assert all("/.hermes-fleet/cache/" in t or "/.hermes-fleet/baseline/" in t for t in points[k:]), points[k:]
    before = (home / ".hermes-fleet" / "history" / "acme" / "000001.json").read_bytes()
    killed = scenario.run_cli(["apply", "-f", b, "--home", home], env, hook="exit", hook_at=k, log=tmp_path / "k.log")
    assert killed.returncode == 137
    folder = home / ".hermes-fleet" / "history" / "acme"
    assert (folder / "000001.json").read_bytes() == before
    debris = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(debris) == 1 and debris[0].startswith(".000002.json.hf"), debris
    listed = history_json(home)
    assert [e["seq"] for e in listed["entries"]] == [1]
    json.loads((folder / debris[0]).read_text())  # staged in full, never published half-written
    assert_converged(b, home)  # the apply itself finished before the kill
    again = apply(b, home)
    assert again.code == 0, again.text
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert [e["seq"] for e in history_json(home)["entries"]] == [1, 2]


def test_rollback_reads_a_from_file_secret_from_the_manifests_folder(home: Path, tmp_path: Path) -> None:
    a_dir = tmp_path / "a"
    a_dir.mkdir()
    (a_dir / "token.txt").write_text("tok-FILE-one\n")
    a = write_fleet(a_dir, [{"name": "alpha", "env": {"API_TOKEN": {"from_file": "token.txt"}}}])
    b = write_fleet(tmp_path / "b", [{"name": "alpha"}])
    assert apply(a, home).code == 0
    assert apply(b, home).code == 0
    assert "API_TOKEN" not in (profile(home, "alpha") / ".env").read_text()
    (a_dir / "token.txt").write_text("tok-FILE-two\n")  # rotated since entry 1
    run = hermes_fleet("rollback", "--home", home)
    assert run.code == 0, run.text
    assert "API_TOKEN=tok-FILE-two" in (profile(home, "alpha") / ".env").read_text()
    assert "tok-FILE" not in run.text and "tok-FILE" not in all_text_under(home / ".hermes-fleet" / "history")
    (a_dir / "token.txt").unlink()
    assert hermes_fleet("rollback", "--to", "2", "--home", home).code == 0
    before = snapshot(home)
    gone = hermes_fleet("rollback", "--to", "1", "--home", home)
    assert gone.code == 1 and "token.txt" in gone.err and "nothing was changed" in gone.err, gone.text
    assert snapshot(home) == before


def test_a_refused_apply_records_nothing(home: Path, tmp_path: Path) -> None:
    a = fleet_a(tmp_path / "a")
    assert apply(a, home).code == 0
    other = write_fleet(tmp_path / "o", [{"name": "alpha"}], fleet="other")
    refused = apply(other, home)
    assert refused.code == 3, refused.text
    assert [p.name for p in history_files(home)] == ["000001.json"]
    assert not (home / ".hermes-fleet" / "history" / "other").exists()


def test_a_damaged_entry_does_not_hide_the_others(two_applies: tuple[Path, Path, Path]) -> None:
    home, _, _ = two_applies
    assert apply(fleet_a(home.parent / "a2"), home).code == 0  # entry 3: A again
    history_files(home)[1].write_text("{not json")  # entry 2 damaged by hand
    listed = hermes_fleet("history", "--home", home)
    assert listed.code == 0 and "(unreadable)" in listed.out and "warning" in listed.err, listed.text
    entries = history_json(home)["entries"]
    assert [e["seq"] for e in entries] == [1, 2, 3] and "unreadable" in entries[1]
    shown = hermes_fleet("history", "show", "2", "--home", home)
    assert shown.code == 1 and "move the file away" in shown.err and "Traceback" not in shown.text
    # The default target skips it: nothing readable before 3 differs from A, so it says so.
    run = hermes_fleet("rollback", "--home", home)
    assert run.code == 2 and "--to N" in run.err, run.text


def test_history_and_rollback_hold_one_entry_s_manifests_at_a_time(
    two_applies: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry holds the manifests it converged to (10,000 bots: 7.5 MB of JSON): listing fifty
    entries, or choosing rollback's target among them, must not hold them all."""
    home, _, _ = two_applies
    assert apply(fleet_a(home.parent / "a2"), home).code == 0  # entry 3: A again
    whole: set[int] = set()  # entries whose manifests are still held

    class Manifests(list):  # type: ignore[type-arg]
        def __init__(self, items: list[Any], seq: int) -> None:
            super().__init__(items)
            self.seq = seq
            whole.add(seq)

        def __del__(self) -> None:
            whole.discard(self.seq)

    real = store.read
    held_at_read: list[set[int]] = []

    def read(root: Path, fleet: str, seq: int) -> dict[str, Any] | None:
        held_at_read.append(set(whole))
        entry = real(root, fleet, seq)
        if entry is not None:
            entry["desired"]["documents"] = Manifests(entry["desired"]["documents"], seq)
        return entry

    monkeypatch.setattr(store, "read", read)
    assert hermes_fleet("history", "--home", home).code == 0
    assert hermes_fleet("history", "--home", home, "-o", "json").code == 0
    run = hermes_fleet("rollback", "--home", home, "--dry-run")
    assert run.code in (0, 2), run.text  # the plan back to entry 2 (B), not applied
    assert "entry 2" in run.out, run.text
    assert len(held_at_read) == 3 + 3 + 4  # history twice, rollback: three records, then its target whole
    assert all(not held for held in held_at_read), held_at_read


def test_apply_json_names_its_history_entry_and_kept_copies(home: Path, tmp_path: Path) -> None:
    a = fleet_a(tmp_path / "a")
    first = apply(a, home, "-o", "json").json()
    assert first["history_entry"] == 1 and first["replaced"] is None
    (profile(home, "alpha") / "SOUL.md").write_text("by hand\n")
    second = apply(a, home, "-o", "json").json()
    assert second["history_entry"] == 2
    assert (Path(second["replaced"]) / "profiles" / "alpha" / "SOUL.md").read_text() == "by hand\n"


def test_rollback_waits_for_the_apply_lock_and_gives_up_with_exit_3(two_applies: tuple[Path, Path, Path]) -> None:
    from controller.adapters import locking

    home, _, _ = two_applies
    with locking.apply_lock(home, timeout=1):  # another run holds it (it writes its pid into the lock file)
        before = snapshot(home)
        run = hermes_fleet("rollback", "--home", home, "--yes", "--lock-timeout", "0.2")
        assert snapshot(home) == before
    assert run.code == 3 and "lock" in run.err, run.text
    assert [e["seq"] for e in history_json(home)["entries"]] == [1, 2]


def test_history_lists_routines_written_inside_a_bot_document(home: Path, tmp_path: Path) -> None:
    """The layout `init` writes: one `kind: Bot` file per bot, its routines inside it."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "fleet.yaml").write_text("apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec: {}\n")
    (folder / "scout.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {name: scout, fleet: acme}\nspec:\n  routines:\n"
        "    - {name: digest, schedule: every 2h, prompt: p}\n    - {name: sweep, schedule: every 1d, prompt: q}\n"
    )
    assert apply(folder, home).code == 0
    (entry,) = history_json(home)["entries"]
    assert entry["desired"]["bots"] == ["scout"] and entry["desired"]["routines"] == ["scout/digest", "scout/sweep"]
    shown = hermes_fleet("history", "show", "1", "--home", home)
    assert "scout/digest, scout/sweep" in shown.out, shown.out
