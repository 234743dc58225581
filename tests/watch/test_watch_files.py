"""The reconciler on local files: edits converge, editor temp files and the home's own writes do not
trigger runs, drift is reported (or corrected with --self-heal), a broken manifest stalls and recovers.

Every test runs the real `python -m controller watch` and waits for its log events (bounded waits).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.integration.helpers import snapshot
from tests.watch.harness import http_get, read_status, sample, title, write_fleet


def _without_status(tree: dict[str, tuple[object, ...]]) -> dict[str, tuple[object, ...]]:
    """The home minus the reconciler's status file (rewritten after every run, through a temp file)."""
    return {
        k: v
        for k, v in tree.items()
        if not k.startswith((".hermes-fleet/watch-status.json", ".hermes-fleet/.watch-status.json."))
    }


def test_a_file_edit_converges_within_seconds(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}, {"name": "beta"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    first = watch.wait_for("reconciled", trigger="start")
    assert first["result"] == "applied" and first["changed"] == 2, watch.transcript()
    assert title(home, "alpha") == "Alpha"

    edited = time.monotonic()
    write_fleet(fleet, [{"name": "alpha", "title": "Alpha Two"}, {"name": "beta"}])
    changed = watch.wait_for("source_changed", timeout=10)
    assert changed["files"] == ["fleet.yaml"]
    run = watch.wait_for("reconciled", timeout=10, trigger="change")
    latency = run["_at"] - edited
    assert run["result"] == "applied" and run["changed"] == 1, watch.transcript()
    assert latency < 10, f"converged {latency:.2f}s after the edit"
    assert title(home, "alpha") == "Alpha Two"
    assert watch.stop() == 0
    assert watch.events[-1]["event"] == "stopped"


def test_editor_temp_files_do_not_trigger_runs(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    watch.wait_for("reconciled", trigger="start", result="applied")

    # What vim, emacs, and friends leave beside a file while saving it: none is a manifest.
    for name in (
        ".fleet.yaml.swp",
        ".fleet.yaml.swx",
        "fleet.yaml~",
        ".#fleet.yaml",
        "4913",
        "#fleet.yaml#",
        "fleet.yaml.tmp",
        ".fleet.yaml.kate-swp",
    ):
        (manifests / name).write_text("garbage: [\n")
    (manifests / "4913").unlink()
    quiet = watch.quiet_for(1.5)  # five debounce windows
    assert not [e for e in quiet if e["event"] in ("source_changed", "reconciled")], watch.transcript()

    # The control: a real save right after is seen, and only the manifest is named.
    write_fleet(fleet, [{"name": "alpha", "title": "Two"}])
    assert watch.wait_for("source_changed")["files"] == ["fleet.yaml"]
    assert watch.wait_for("reconciled", trigger="change")["result"] == "applied"
    assert title(home, "alpha") == "Two"
    assert watch.stop() == 0


def test_a_vim_style_save_sequence_converges(spawn, manifests: Path, home: Path) -> None:
    """vim: probe 4913, rename the file to file~, write a new file, delete file~ (the manifest is briefly gone)."""
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    watch.wait_for("reconciled", trigger="start", result="applied")
    (manifests / "4913").write_text("")
    (manifests / "4913").unlink()
    backup = manifests / "fleet.yaml~"
    os.rename(fleet, backup)
    time.sleep(0.05)
    write_fleet(fleet, [{"name": "alpha", "title": "Saved By Vim"}])
    backup.unlink()
    watch.wait_until(
        lambda e: e["event"] == "reconciled" and e["result"] == "applied" and e["trigger"] == "change",
        what="an applied run after the save",
    )
    assert title(home, "alpha") == "Saved By Vim"
    assert watch.proc.poll() is None, "the watcher must survive a manifest that briefly disappears"
    assert watch.stop() == 0


def test_the_homes_own_writes_never_trigger_runs_even_inside_the_watched_folder(spawn, manifests: Path) -> None:
    home = manifests / "hermes"  # the home sits inside the watched folder
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": f"b{i}", "title": f"B{i}"} for i in range(5)])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    assert watch.wait_for("reconciled", trigger="start")["result"] == "applied", watch.transcript()
    assert (home / "profiles" / "b4" / "profile.yaml").exists()  # the apply wrote .yaml files in the folder
    quiet = watch.quiet_for(1.5)
    assert not [e for e in quiet if e["event"] in ("source_changed", "reconciled")], watch.transcript()

    write_fleet(fleet, [{"name": f"b{i}", "title": f"B{i} v2"} for i in range(5)])
    run = watch.wait_for("reconciled", trigger="change")
    assert run["result"] == "applied" and run["changed"] == 5
    quiet = watch.quiet_for(1.5)  # that apply rewrote five profiles and the status file: no echo
    assert not [e for e in quiet if e["event"] in ("source_changed", "reconciled")], watch.transcript()
    assert len(watch.runs()) == 2
    assert watch.stop() == 0


def test_a_hand_edit_is_reported_as_drift_and_not_corrected(spawn, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One", "model": {"default": "m1"}}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.5")
    watch.wait_for("reconciled", trigger="start", result="applied")
    watch.wait_for("reconciled", trigger="interval", result="in-sync")

    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("m1", "hand-edited"))
    detected = watch.wait_for("drift_detected")
    assert detected["objects"] == ["bot/alpha"]
    run = watch.wait_for("reconciled", trigger="interval")
    assert run["result"] == "drift" and run["drift"] == ["bot/alpha"] and run["changed"] == 0
    watch.wait_for("reconciled", trigger="interval", result="drift")  # reported again, still not corrected
    assert "hand-edited" in config.read_text()
    status = read_status(home, lambda s: s["last_result"] == "drift")
    assert status["drift"] == ["bot/alpha"] and "reported, not corrected" in status["message"]
    assert watch.stop() == 0


def test_self_heal_corrects_a_hand_edit(spawn, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One", "model": {"default": "m1"}}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.5", "--self-heal")
    assert watch.wait_for("started")["mode"] == "self-heal"
    watch.wait_for("reconciled", trigger="start", result="applied")
    watch.wait_for("reconciled", trigger="interval", result="in-sync")

    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("m1", "hand-edited"))
    healed = watch.wait_for("reconciled", trigger="interval", result="applied")
    assert healed["changed"] == 1
    assert "hand-edited" not in config.read_text() and "m1" in config.read_text()
    assert watch.wait_for("reconciled", trigger="interval")["result"] == "in-sync"
    assert watch.stop() == 0


def test_a_broken_manifest_stalls_without_touching_anything_and_recovers(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Good"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.5", "--health-port", "0")
    port = int(watch.wait_for("health_listening")["address"].rsplit(":", 1)[1])
    watch.wait_for("reconciled", trigger="start", result="applied")
    assert http_get(port, "/healthz")[0] == 200
    before = _without_status(snapshot(home))

    # Invalid: a field that does not exist, plus a renamed bot that would be created if applied.
    write_fleet(fleet, [{"name": "alpha", "title": "Bad", "no_such_field": 1}, {"name": "gamma"}])
    stalled = watch.wait_for("reconciled", trigger="change")
    assert stalled["result"] == "stalled" and "no_such_field" in stalled["message"], watch.transcript()
    again = watch.wait_for("reconciled", trigger="interval")
    assert again["result"] == "stalled" and "waiting for the source to change" in again["message"]
    code, _, body = http_get(port, "/healthz")
    assert code == 503 and '"unhealthy"' in body and "stalled" in body
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_stalled") == 1
    assert _without_status(snapshot(home)) == before, "a stalled run must not write to the home"
    assert title(home, "alpha") == "Good"

    # A YAML syntax error is no different.
    fleet.write_text("apiVersion: hermes-fleet/v1\nkind: Fleet\nspec: {bots: [\n")
    assert watch.wait_for("reconciled", trigger="change")["result"] == "stalled"
    assert _without_status(snapshot(home)) == before

    write_fleet(fleet, [{"name": "alpha", "title": "Fixed"}, {"name": "gamma"}])
    fixed = watch.wait_for("reconciled", trigger="change")
    assert fixed["result"] == "applied" and fixed["changed"] == 2, watch.transcript()
    assert title(home, "alpha") == "Fixed" and (home / "profiles" / "gamma").is_dir()
    assert http_get(port, "/healthz")[0] == 200
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_stalled") == 0
    assert watch.stop() == 0


def test_a_folder_left_without_manifests_stalls_instead_of_crashing(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Here"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    watch.wait_for("reconciled", trigger="start", result="applied")
    fleet.rename(manifests / "fleet.yaml.disabled")
    stalled = watch.wait_for("reconciled", trigger="change")
    assert stalled["result"] == "stalled" and "no manifest files" in stalled["message"], watch.transcript()
    assert watch.proc.poll() is None
    assert (home / "profiles" / "alpha").is_dir()  # nothing pruned or touched
    (manifests / "fleet.yaml.disabled").rename(fleet)
    assert watch.wait_for("reconciled", trigger="change")["result"] in ("in-sync", "applied")
    assert watch.stop() == 0
