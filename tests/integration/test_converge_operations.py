"""Partial failure and recovery, the apply lock, status, and the install-wide settings."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from controller.adapters import cronstore, envfile, locking
from controller.engine import health, observing
from tests.integration.conftest import SECRET_PEER
from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    hermes_fleet,
    profile,
    read_yaml,
    tiny_png,
    write_fleet,
)


def test_one_failing_bot_does_not_stop_the_others_and_the_next_apply_finishes(home: Path, manifests: Path) -> None:
    bots = [{"name": "alpha", "title": "Alpha"}, {"name": "beta", "title": "Beta"}]
    manifest = write_fleet(manifests, bots)
    assert apply(manifest, home).code == 0
    # A plain file where the assets folder belongs: only writing the avatar can fail.
    blocker = profile(home, "alpha") / "assets"
    blocker.write_text("not a folder")
    (manifests / "face.png").write_bytes(tiny_png())
    bots = [
        {"name": "alpha", "title": "Alpha 2", "avatar": {"image": "face.png"}},
        {"name": "beta", "title": "Beta 2"},
    ]
    manifest = write_fleet(manifests, bots)

    run = apply(manifest, home)
    assert run.code == 1, run.text
    assert "bot/alpha: failed" in run.out
    assert "bot/beta: updated" in run.out
    assert read_yaml(profile(home, "beta") / "profile.yaml")["ui_meta"]["hermes-bots"]["title"] == "Beta 2"
    status = hermes_fleet("status", "--home", home, "-o", "json").json()
    assert status["fleets"][0]["last_apply"]["result"] == "partial"
    assert "bot/alpha" in changes(manifest, home)
    assert "bot/beta" not in changes(manifest, home)

    blocker.unlink()
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert (profile(home, "alpha") / "assets" / "avatar.png").read_bytes() == tiny_png()
    assert_converged(manifest, home)
    status = hermes_fleet("status", "--home", home, "-o", "json").json()
    assert status["fleets"][0]["last_apply"]["result"] == "ok"


def test_objects_that_share_a_cause_are_one_line_on_stderr(home: Path, manifests: Path) -> None:
    """1,000 bots missing one environment variable are one line naming the cause, not 1,000 (each
    is still in the plan on stdout, and in -o json)."""
    missing = {"KEY": {"from_env": "HF_TEST_UNSET_GROUPED"}}
    bots = [{"name": f"bot-{i}", "env": missing} for i in range(5)]
    bots.append({"name": "odd", "env": {"KEY": {"from_env": "HF_TEST_UNSET_ALONE"}}})
    run = apply(write_fleet(manifests, bots), home)
    assert run.code == 1, run.text
    lines = [line for line in run.err.splitlines() if "not applied" in line]
    assert lines == [
        "hermes-fleet: 5 objects not applied (bot/bot-0, bot/bot-1, bot/bot-2 and 2 more): env KEY: environment variable "
        "HF_TEST_UNSET_GROUPED is not set on this machine; export it before running hermes-fleet (or use from_file)",
        "hermes-fleet: bot/odd not applied: env KEY: environment variable HF_TEST_UNSET_ALONE is not set on this machine; "
        "export it before running hermes-fleet (or use from_file)",
    ]
    assert all(f"bot/bot-{i}" in run.out for i in range(5))


def test_apply_waits_for_the_lock_and_names_the_holder(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "title": "Bot"}])
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from controller.adapters import locking
            with locking.apply_lock(Path({str(home)!r}), timeout=5, purpose="watch"):
                print("held", flush=True)
                sys.stdin.readline()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "held"
            started = time.monotonic()
            run = apply(manifest, home, "--lock-timeout", "0.5")
            waited = time.monotonic() - started
            assert run.code == 3, run.text
            assert f"pid {holder.pid}" in run.err and "watch" in run.err
            assert waited >= 0.4
            assert not profile(home, "bot").exists()
        finally:
            holder.stdin.write("\n")
            holder.stdin.flush()
            holder.wait(timeout=10)
    run = apply(manifest, home, "--lock-timeout", "0.5")
    assert run.code == 0, run.text
    assert profile(home, "bot").is_dir()


def test_lock_held_in_another_thread_blocks_apply(home: Path, manifests: Path) -> None:
    import threading

    manifest = write_fleet(manifests, [{"name": "bot"}])
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locking.apply_lock(home, timeout=5):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(5)
        run = apply(manifest, home, "--lock-timeout", "0.5")
        assert run.code == 3, run.text
        assert f"pid {os.getpid()}" in run.err
    finally:
        release.set()
        thread.join(10)
    assert apply(manifest, home).code == 0


def test_status_shows_managed_objects_last_apply_and_drift(home: Path, manifests: Path) -> None:
    assert "No fleet manages" in hermes_fleet("status", "--home", home).out
    manifest = write_fleet(
        manifests,
        [{"name": "alpha", "title": "Alpha", "model": {"default": "m"}}, {"name": "beta", "title": "Beta"}],
    )
    assert apply(manifest, home).code == 0

    data = hermes_fleet("status", "--home", home, "-o", "json").json()
    assert data["kind"] == "status"
    fleet = data["fleets"][0]
    assert fleet["fleet"] == "acme" and fleet["managed"] == 2
    assert fleet["last_apply"]["digest"].startswith("sha256:") and fleet["last_apply"]["at"]
    assert fleet["drifted"] == 0
    assert {o["object"] for o in fleet["objects"]} >= {"bot/alpha", "bot/beta"}
    text = hermes_fleet("status", "--home", home).out
    assert "2 bot(s) managed" in text and "in sync" in text and fleet["last_apply"]["digest"][:19] in text

    config = profile(home, "alpha") / "config.yaml"
    config.write_text(config.read_text().replace("default: m", "default: hand"))
    data = hermes_fleet("status", "--home", home, "-o", "json").json()
    alpha = next(o for o in data["fleets"][0]["objects"] if o["object"] == "bot/alpha")
    assert alpha["drifted_fields"] == ["config:model.default"]
    assert data["fleets"][0]["drifted"] == 1
    text = hermes_fleet("status", "--home", home).out
    assert "bot/alpha: drift in config:model.default" in text

    with_manifest = hermes_fleet("status", "--home", home, "-f", manifest, "-o", "json").json()
    assert with_manifest["fleets"][0]["pending"]["changes_pending"] is True


def test_status_reads_each_profile_and_cron_store_once(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """status checks every bot for drift and for runtime health, and every routine against its
    bot's cron store: one observation and one read of `jobs.json` per profile (10,000 bots: 19.7 s
    with two and four, 11.6 s now), and what it finds is the same (a store that cannot be read is
    reported for each routine and in the health)."""
    routines = [{"name": n, "schedule": "0 9 * * *", "prompt": "Go"} for n in ("Digest", "Sweep")]
    bots = [{"name": n, "title": n.title(), "routines": routines} for n in ("alpha", "beta", "gamma")]
    assert apply(write_fleet(manifests, bots), home).code == 0
    observed: list[str] = []
    stores: list[str] = []
    real_observe, real_jobs = observing.observe_profile, cronstore.read_jobs
    monkeypatch.setattr(
        observing, "observe_profile", lambda root, name, **kw: observed.append(name) or real_observe(root, name, **kw)
    )
    monkeypatch.setattr(cronstore, "read_jobs", lambda folder: stores.append(Path(folder).name) or real_jobs(folder))
    # --no-cache: every store read in full, once (with the observation cache, an unchanged one is not read at all)
    data = hermes_fleet("status", "--home", home, "-o", "json", "--no-cache").json()
    assert sorted(observed) == ["alpha", "beta", "gamma"] and sorted(stores) == ["alpha", "beta", "gamma"]
    assert data["fleets"][0]["drifted"] == 0 and data["fleets"][0]["unknown"] == 0

    (profile(home, "beta") / "cron" / "jobs.json").write_text("{not json")
    data = hermes_fleet("status", "--home", home, "-o", "json").json()
    broken = {o["object"]: o["drifted_fields"] for o in data["fleets"][0]["objects"] if o["object"].startswith("routine/beta")}
    assert len(broken) == 2 and all(str(v).startswith("unreadable:") for v in broken.values()), broken
    beta = next(b for b in data["fleets"][0]["health"]["bots"] if b["bot"] == "beta")
    assert any("jobs.json" in error for error in beta["errors"]), beta

    # The drift check looks up the Bot Chat, the health check does not: a state.db that cannot be
    # read is the drift's problem, and the health status reports is the one watch computes alone.
    (profile(home, "gamma") / "state.db").write_bytes(b"not a database" * 100)
    data = hermes_fleet("status", "--home", home, "-o", "json").json()
    assert data["fleets"][0]["health"] == health.check(home, "acme").to_json()


def test_install_wide_settings_land_in_the_root_config(home: Path, manifests: Path) -> None:
    home.mkdir()
    (home / "config.yaml").write_text("# root notes\nunmanaged: keep\n")
    manifest = write_fleet(
        manifests,
        [{"name": "bot", "title": "Bot"}],
        gateway={
            "bot_loop_guard": {"enabled": False, "max_events": 4, "window_seconds": 120},
            "bot_mode_protocol": False,
            "group_router": {"provider": "openrouter", "model": "google/gemini-flash"},
        },
        checkpoints={"enabled": True, "max_snapshots": 7},
        peers=[
            {
                "name": "spark",
                "url": "http://spark.lan:8642/",
                "key": {"from_env": "SPARK_KEY"},
                "note": "lab",
            }
        ],
        config={"timezone": "Europe/Berlin", "display": {"bell": True}},
    )
    run = apply(manifest, home)
    assert run.code == 0, run.text
    text = (home / "config.yaml").read_text()
    assert text.startswith("# root notes\nunmanaged: keep\n")
    data = read_yaml(home / "config.yaml")
    assert data["gateway"]["bot_loop_guard"] == {
        "enabled": False,
        "max_events": 4,
        "window_seconds": 120,
    }
    assert data["agent"]["bot_mode_protocol"] is False
    assert data["auxiliary"]["group_router"] == {"provider": "openrouter", "model": "google/gemini-flash"}
    assert data["checkpoints"] == {"enabled": True, "max_snapshots": 7}
    assert data["bot_peers"] == {"spark": {"url": "http://spark.lan:8642", "note": "lab"}}
    assert data["timezone"] == "Europe/Berlin" and data["display"] == {"bell": True}
    assert envfile.read_env(home / ".env").get("HERMES_PEER_SPARK_KEY") == SECRET_PEER
    # Every bot gets it too: a bot's process reads only its own profile (docs/hermes/home.md#what-a-bot-reads).
    bot = read_yaml(profile(home, "bot") / "config.yaml")
    assert bot["checkpoints"] == {"enabled": True, "max_snapshots": 7} and bot["timezone"] == "Europe/Berlin"
    assert bot["bot_peers"] == {"spark": {"url": "http://spark.lan:8642", "note": "lab"}}
    assert envfile.read_env(profile(home, "bot") / ".env").get("HERMES_PEER_SPARK_KEY") == SECRET_PEER
    assert_converged(manifest, home)

    # Dropping a policy key from the manifests: a plain apply leaves it in the root config (an
    # install-wide object goes only with --prune), and says so in the plan's notes ...
    manifest = write_fleet(manifests, [{"name": "bot", "title": "Bot"}], config={"timezone": "Europe/Berlin"})
    plain = apply(manifest, home)
    assert plain.code == 0 and "stay in the root profile" in plain.out, plain.text
    data = read_yaml(home / "config.yaml")
    assert data["display"] == {"bell": True} and "spark" in data["bot_peers"]
    assert "HERMES_PEER_SPARK_KEY" in (home / ".env").read_text()
    # ... and in every bot that inherited it: the bot's copy is install-wide too (before, a plain
    # apply removed the peer, its key and the policy from each bot while the root kept them).
    assert "the bots that inherited them (bot)" in plain.out, plain.text
    bot = read_yaml(profile(home, "bot") / "config.yaml")
    assert bot["checkpoints"] == {"enabled": True, "max_snapshots": 7} and bot["display"] == {"bell": True}
    assert bot["bot_peers"] == {"spark": {"url": "http://spark.lan:8642", "note": "lab"}}
    assert envfile.read_env(profile(home, "bot") / ".env").get("HERMES_PEER_SPARK_KEY") == SECRET_PEER
    assert_converged(manifest, home)
    assert apply(manifest, home).code == 0  # a second plain apply keeps them too (the record remembers them)
    assert read_yaml(profile(home, "bot") / "config.yaml")["bot_peers"]
    # ... --prune removes it from the root config (untouched since).
    assert apply(manifest, home, "--prune").code == 0
    data = read_yaml(home / "config.yaml")
    assert "display" not in data and "bot_peers" not in data and "gateway" not in data
    assert data["unmanaged"] == "keep"
    assert "HERMES_PEER_SPARK_KEY" not in (home / ".env").read_text()
    # ... and from every bot, where this fleet wrote it.
    bot = read_yaml(profile(home, "bot") / "config.yaml")
    assert "bot_peers" not in bot and "checkpoints" not in bot and bot["timezone"] == "Europe/Berlin"
    assert "HERMES_PEER_SPARK_KEY" not in (profile(home, "bot") / ".env").read_text()
    assert_converged(manifest, home)


def test_two_fleets_cannot_both_own_an_install_wide_key(home: Path, manifests: Path) -> None:
    a = write_fleet(manifests / "a", [{"name": "a-bot"}], fleet="team-a", config={"timezone": "UTC"})
    assert apply(a, home).code == 0
    b = write_fleet(manifests / "b", [{"name": "b-bot"}], fleet="team-b", config={"timezone": "Europe/Berlin"})
    run = apply(b, home, "--adopt")
    assert run.code == 3, run.text
    assert read_yaml(home / "config.yaml")["timezone"] == "UTC"
