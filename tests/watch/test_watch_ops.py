"""Operating the reconciler: --once exit codes, the status file and `status`, log formats, /healthz and
/metrics, SIGTERM (mid-apply, and mid-log-line), one reconciler per home, and --host slices.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from ruamel.yaml import YAML

from controller.adapters.sources import LocalSource
from controller.engine.watching import KEEP_RUNS, Log, Options, Reconciler
from tests.integration.helpers import apply, assert_converged, snapshot
from tests.watch.harness import REPO, cli, environ, http_get, read_status, sample, title, write_fleet

# --- --once ---------------------------------------------------------------------------------------


def _last_run(stdout: str) -> dict[str, object]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    runs = [e for e in lines if e["event"] == "reconciled"]
    assert len(runs) == 1, stdout
    return runs[0]


def test_once_exit_codes(user: Path, manifests: Path, home: Path) -> None:
    fleet = manifests / "fleet.yaml"

    def once(*args: str | Path) -> tuple[int, dict[str, object]]:
        done = cli(user, "watch", "--once", "--home", home, "--log-format", "json", *(args or ("-f", fleet)))
        return done.returncode, _last_run(done.stdout) if done.stdout.strip() else {"stderr": done.stderr}

    write_fleet(fleet, [{"name": "alpha", "title": "One", "model": {"default": "m1"}}])
    code, run = once()
    assert (code, run["result"], run["trigger"]) == (0, "applied", "once")
    code, run = once()
    assert (code, run["result"]) == (0, "in-sync")
    status = read_status(home)
    assert status["last_result"] == "in-sync" and status["next_run_at"] is None and len(status["runs"]) == 1

    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("m1", "hand-edited"))
    code, run = once()
    assert (code, run["result"], run["drift"]) == (0, "drift", ["bot/alpha"])
    assert "hand-edited" in config.read_text()  # reported, not corrected (no --self-heal)
    code, run = once("-f", fleet, "--self-heal")
    assert (code, run["result"]) == (0, "applied") and "m1" in config.read_text()

    before = snapshot(home / "profiles")
    write_fleet(manifests / "broken.yaml", [{"name": "beta", "titel": "typo"}])
    code, run = once("-f", manifests)
    assert (code, run["result"]) == (2, "stalled") and "titel" in str(run["message"])
    assert snapshot(home / "profiles") == before
    (manifests / "broken.yaml").unlink()

    write_fleet(
        fleet,
        [
            {"name": "alpha", "title": "One", "model": {"default": "m1"}},
            {"name": "beta", "env": {"KEY": {"from_env": "HF_TEST_UNSET_VARIABLE"}}},
        ],
    )
    code, run = once()
    assert (code, run["result"]) == (1, "partial") and "HF_TEST_UNSET_VARIABLE" in str(run["message"])

    other = write_fleet(manifests.parent / "other" / "fleet.yaml", [{"name": "gamma"}], fleet="other")
    assert apply(other, home).code == 0
    write_fleet(fleet, [{"name": "alpha", "title": "One", "model": {"default": "m1"}}, {"name": "gamma"}])
    code, run = once()
    assert (code, run["result"]) == (3, "conflict") and "bot/gamma" in str(run["message"])

    write_fleet(fleet, [{"name": "alpha", "title": "Two", "model": {"default": "m1"}}])
    lock = os.open(home / ".hermes-fleet" / "apply.lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        code, run = once("-f", fleet, "--lock-timeout", "0.3")
        assert (code, run["result"]) == (3, "busy") and "holds the lock" in str(run["message"])
    finally:
        os.close(lock)
    assert title(home, "alpha") == "One"

    code, run = once("--git", (manifests.parent / "no-such-repo.git").as_uri())
    assert (code, run["result"]) == (1, "source-error") and "fatal:" in str(run["message"])


def test_host_slices(user: Path, manifests: Path, tmp_path: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "a", "host": "alpha"}, {"name": "b", "host": "beta"}, {"name": "c"}])
    done = cli(user, "watch", "--once", "-f", fleet, "--home", tmp_path / "ha", "--host", "alpha")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "ha" / "profiles").iterdir()) == ["a", "c"]
    assert read_status(tmp_path / "ha")["host"] == "alpha"

    # Without --host, a fleet that names hosts is sliced for this machine's hostname.
    here = socket.gethostname()
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "x", "host": here}, {"name": "y", "host": "elsewhere"}])
    done = cli(user, "watch", "--once", "-f", fleet, "--home", tmp_path / "hx")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "hx" / "profiles").iterdir()) == ["x"]


# --- status file, `status`, logs ------------------------------------------------------------------


def test_status_file_and_status_verb_while_running_and_after(spawn, user: Path, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.3")
    watch.wait_for("reconciled", trigger="start", result="applied")
    watch.wait_for("reconciled", trigger="interval", result="in-sync")
    status = read_status(home, lambda s: len(s["runs"]) >= 2)
    assert status["schemaVersion"] == 1 and status["pid"] == watch.proc.pid
    assert status["source"] == str(manifests) and status["fleet"] == "acme" and status["mode"] == "report"
    assert status["interval"] == 0.3 and status["last_result"] == "in-sync" and status["drift"] == []
    assert status["last_revision"].startswith("sha256:") and status["last_good_revision"] == status["last_revision"]
    assert status["next_run_at"] is not None
    assert [r["result"] for r in status["runs"][:2]] == ["applied", "in-sync"]
    assert {"at", "trigger", "result", "revision", "digest", "changed", "failed", "drift", "message", "seconds"} <= set(
        status["runs"][0]
    )

    text = cli(user, "status", "--home", home)
    assert text.returncode == 0, text.stderr
    assert f"Reconciler (pid {watch.proc.pid}, report, every 0.3s): source {manifests}" in text.stdout
    assert "last run: in-sync" in text.stdout and "recent runs:" in text.stdout
    as_json = json.loads(cli(user, "status", "--home", home, "-o", "json").stdout)
    assert as_json["reconciler"]["pid"] == watch.proc.pid and as_json["reconciler"]["running"] is True

    write_fleet(fleet, [{"name": "alpha", "title": "One", "no_such": 1}])
    watch.wait_for("reconciled", result="stalled")
    stalled = read_status(home, lambda s: s["last_result"] == "stalled")
    assert any("no_such" in r["message"] for r in stalled["runs"] if r["result"] == "stalled")
    assert stalled["last_good_revision"] == status["last_revision"]
    assert watch.stop() == 0
    stopped = read_status(home, lambda s: s["next_run_at"] is None)
    assert stopped["last_result"] == "stalled"
    after = cli(user, "status", "--home", home).stdout
    assert "next run: stopped" in after
    # Its status file outlives it: status says it is not running, not the PID it had.
    assert f"Reconciler not running since {stopped['updated_at']} (was report, every 0.3s)" in after, after
    assert f"pid {watch.proc.pid}" not in after
    assert json.loads(cli(user, "status", "--home", home, "-o", "json").stdout)["reconciler"]["running"] is False


def test_the_status_file_keeps_the_last_runs_only(manifests: Path, home: Path, user: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha"}])
    out = io.StringIO()
    reconciler = Reconciler(home, LocalSource([str(manifests)], recursive=False), Options(interval=60), Log("text", out))
    for _ in range(KEEP_RUNS + 5):
        reconciler.reconcile("test")
    reconciler.write_status()
    status = read_status(home)
    assert len(status["runs"]) == KEEP_RUNS and status["runs"][-1]["result"] == "in-sync"
    assert out.getvalue().count(" reconciled trigger=test ") == KEEP_RUNS + 5


def test_json_log_is_one_object_per_line(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300", log_format="json")
    watch.wait_for("reconciled", trigger="start")
    write_fleet(fleet, [{"name": "alpha", "title": "A title with spaces = and equals"}])
    watch.wait_for("reconciled", trigger="change")
    assert watch.stop() == 0
    objects = [json.loads(line) for line in watch.lines]  # every line parses on its own
    assert all(isinstance(o, dict) and isinstance(o.get("event"), str) and "time" in o for o in objects)
    assert [o["event"] for o in objects] == ["started", "reconciled", "source_changed", "reconciled", "stopping", "stopped"]
    assert objects[1]["changed"] == 1 and isinstance(objects[1]["seconds"], float)
    assert objects[4]["signal"] == "SIGTERM"


# --- /healthz and /metrics ------------------------------------------------------------------------

METRIC_LINE = re.compile(r'^(# (HELP|TYPE) .+|[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.]+(e[+-]?[0-9]+)?)$')


def test_health_and_metrics_on_an_ephemeral_loopback_port(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300", "--health-port", "0", log_format="text")
    address = watch.wait_for("health_listening")["address"]
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", address)
    assert match and int(match.group(1)) > 0, address
    port = int(match.group(1))
    watch.wait_for("reconciled", trigger="start", result="applied")

    code, kind, body = http_get(port, "/healthz")
    assert code == 200 and kind == "application/json"
    assert json.loads(body) == {"status": "ok", "last_result": "applied"}
    code, kind, body = http_get(port, "/metrics")
    assert code == 200 and kind.startswith("text/plain")
    assert all(METRIC_LINE.match(line) for line in body.splitlines()), body
    assert "# TYPE hermes_fleet_reconcile_total counter" in body
    assert sample(body, "hermes_fleet_reconcile_total", result="applied") == 1
    assert sample(body, "hermes_fleet_stalled") == 0 and sample(body, "hermes_fleet_drifted_objects") == 0

    write_fleet(fleet, [{"name": "alpha", "title": "Two"}])
    watch.wait_for("reconciled", trigger="change", result="applied")
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_reconcile_total", result="applied") == 2
    assert http_get(port, "/nope")[0] == 404
    assert watch.stop() == 0


def test_no_health_server_without_the_flag(spawn, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    watch.wait_for("reconciled")
    assert watch.stop() == 0
    assert not [e for e in watch.events if e["event"] == "health_listening"]


# --- signals --------------------------------------------------------------------------------------


def _every_file_parses(home: Path) -> int:
    yaml = YAML(typ="safe", pure=True)
    checked = 0
    for path in home.rglob("*"):
        assert ".staging-" not in path.name, f"staging dir left behind: {path}"
        assert not path.name.endswith(".tmp"), f"temp file left behind: {path}"
        if not path.is_file():
            continue
        if path.suffix in (".yaml", ".yml"):
            yaml.load(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.name == ".env":
            for line in path.read_text(encoding="utf-8").splitlines():
                assert not line.strip() or line.startswith("#") or "=" in line, f"{path}: {line!r}"
        elif path.suffix == ".db":
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path
            finally:
                conn.close()
        else:
            continue
        checked += 1
    return checked


def _lock_is_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


BIG = 100  # 20-70 ms per new profile here: seconds of apply for the signal to land in


def test_sigterm_mid_apply_leaves_a_consistent_home(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": f"bot{i:03d}", "title": f"Bot {i}"} for i in range(BIG)])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    profiles = home / "profiles"
    deadline = time.monotonic() + 20
    while not (profiles.is_dir() and any(not p.name.startswith(".") for p in profiles.iterdir())):
        assert time.monotonic() < deadline and watch.proc.poll() is None, watch.transcript()
        time.sleep(0.002)
    signalled = time.monotonic()
    watch.signal(signal.SIGTERM)
    assert watch.proc.wait(timeout=10) == 0, watch.transcript()
    assert time.monotonic() - signalled < 5, "stops between two objects, not after the whole apply"
    watch.close()

    events = [e["event"] for e in watch.events]
    assert events[-1] == "stopped" and "stopping" in events
    run = watch.runs()[-1]
    assert run["result"] == "interrupted" and 0 < run["changed"] < BIG, watch.transcript()
    created = [p for p in profiles.iterdir() if not p.name.startswith(".")]
    assert len(created) == run["changed"]

    assert _every_file_parses(home) > 3 * len(created)
    assert _lock_is_free(home / ".hermes-fleet" / "apply.lock")
    assert _lock_is_free(home / ".hermes-fleet" / "watch.lock")
    status = read_status(home)
    assert status["last_result"] == "interrupted" and status["next_run_at"] is None

    finish = apply(fleet, home)
    assert finish.code == 0, finish.text
    assert f"Apply complete: {BIG - len(created)} object(s) changed" in finish.out, finish.out[-500:]
    assert_converged(fleet, home)
    assert all(title(home, f"bot{i:03d}") == f"Bot {i}" for i in range(BIG))


def test_sigterm_while_a_log_line_is_being_written(user: Path, manifests: Path, home: Path) -> None:
    """The handler logs `stopping` itself; it must not deadlock on the log's lock held by the interrupted write.

    stdout is a tiny pipe nobody reads, so the watcher blocks inside a log write; SIGTERM lands there.
    """
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha"}])
    argv = [sys.executable, "-m", "controller", "watch", "-f", str(manifests), "--home", str(home), "--interval", "0.01"]
    proc = subprocess.Popen(argv, cwd=REPO, env=environ(user), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    stdout = proc.stdout
    out: list[bytes] = []
    drain = threading.Thread(target=lambda: out.append(stdout.read()), daemon=True)
    try:
        fcntl.fcntl(stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
        deadline = time.monotonic() + 15
        while "pipe_write" not in Path(f"/proc/{proc.pid}/wchan").read_text():
            assert time.monotonic() < deadline and proc.poll() is None, "the watcher never filled its stdout pipe"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the handler runs now, inside the blocked write
        drain.start()
        assert proc.wait(timeout=10) == 0, "deadlocked in the SIGTERM handler"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if not drain.ident:
            drain.start()
        drain.join(timeout=5)
        stdout.close()
    text = out[0].decode() if out else ""
    assert "stopping signal=SIGTERM" in text, text[-2000:]
    assert re.search(r" stopped runs=\d+ level=info$", text.rstrip()), text[-2000:]


# --- one reconciler per home ----------------------------------------------------------------------


def test_two_reconcilers_on_one_home_cannot_both_write(spawn, user: Path, manifests: Path, home: Path, tmp_path: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    first = spawn("-f", manifests, "--home", home, "--interval", "300")
    first.wait_for("reconciled", trigger="start", result="applied")
    read_status(home, lambda s: s["pid"] == first.proc.pid)
    before = snapshot(home)

    # The second would change the home if it ran at all: other manifests, another title, a new bot.
    intruder = write_fleet(tmp_path / "intruder" / "fleet.yaml", [{"name": "alpha", "title": "Intruder"}, {"name": "beta"}])
    for extra in ((), ("--once",), ("--self-heal",)):
        started = time.monotonic()
        second = cli(user, "watch", "-f", intruder, "--home", home, "--interval", "300", *extra, timeout=30)
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"another hermes-fleet watch is running on {home} (pid {first.proc.pid})" in second.stderr
        assert time.monotonic() - started < 10, "refused at once, no waiting"
        assert second.stdout == ""
    assert snapshot(home) == before, "the second reconciler wrote to the home"
    assert first.proc.poll() is None and len(first.runs()) == 1
    assert first.stop() == 0

    after = cli(user, "watch", "--once", "-f", intruder, "--home", home)
    assert after.returncode == 0, after.stdout + after.stderr  # the lock went with the first process
    assert title(home, "alpha") == "Intruder"
