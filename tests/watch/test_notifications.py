"""Notifications over real loopback HTTP: receivers that answer, fail, refuse and hang.

The adapter tests drive `adapters.webhooks.Notifier` directly; the end-to-end tests run the real
reconciler (`hermes-fleet watch` as a subprocess) and `apply --notify`, with the webhook URL (and
its token) given by a secret reference. The URL must never appear in a log line or in output.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import webhooks
from tests.integration.helpers import hermes_fleet
from tests.watch.harness import fleet_doc, http_get, sample

TOKEN = "T0KEN-hooks-9f8e7d6c"


class Receiver:
    """A webhook receiver on 127.0.0.1. `mode`: ok | fail:N (500 N times, then 200) | gone (404) | hang."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.attempts = 0
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                outer.attempts += 1
                if outer.mode == "hang":
                    outer.release.wait(30)  # never answers while the test runs
                    return
                status = 200
                if outer.mode.startswith("fail:") and outer.attempts <= int(outer.mode.split(":")[1]):
                    status = 500
                elif outer.mode == "gone":
                    status = 404
                if status == 200:
                    outer.bodies.append(json.loads(body))
                    outer.paths.append(self.path)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/{TOKEN}?key={TOKEN}"

    def wait(self, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.bodies) < count:
            assert time.monotonic() < deadline, f"received {self.bodies} after {self.attempts} attempt(s)"
            time.sleep(0.02)
        return self.bodies

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[Any]:
    made: list[Receiver] = []

    def make(mode: str = "ok") -> Receiver:
        made.append(Receiver(mode))
        return made[-1]

    yield make
    for r in made:
        r.close()


class Lines:
    """A Log that keeps every event line the notifier writes, rendered as the reconciler would."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, **fields: Any) -> None:
        self.events.append((name, fields))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [f for n, f in self.events if n == name]

    def text(self) -> str:
        return json.dumps(self.events, default=str)


def event(kind: str = "drift") -> webhooks.Event:
    return webhooks.Event(kind, "warning", "acme", "1 object(s) differ", {"objects": ["bot/alpha"]}, "2026-01-01T00:00:00+00:00")


def test_json_and_slack_payloads(receivers) -> None:
    plain, slack = receivers(), receivers()
    log = Lines()
    notifier = webhooks.Notifier(log)
    notifier.configure([webhooks.Target("plain", plain.url), webhooks.Target("chat", slack.url, "slack")])
    notifier.post(event())
    assert notifier.close(10)
    body = plain.wait()[0]
    assert {k: body[k] for k in ("schemaVersion", "source", "event", "severity", "fleet", "summary")} == {
        "schemaVersion": 1, "source": "hermes-fleet", "event": "drift", "severity": "warning", "fleet": "acme",
        "summary": "1 object(s) differ",
    }  # fmt: skip
    assert body["details"] == {"objects": ["bot/alpha"]}
    assert set(slack.wait()[0]) == {"text"} and "*drift*" in slack.bodies[0]["text"]
    assert plain.paths == [f"/hooks/{TOKEN}?key={TOKEN}"]
    assert TOKEN not in log.text()


def test_a_failing_receiver_is_retried_with_backoff(receivers) -> None:
    flaky = receivers("fail:2")
    log = Lines()
    notifier = webhooks.Notifier(log, backoff=0.2)
    notifier.configure([webhooks.Target("flaky", flaky.url)])
    started = time.monotonic()
    notifier.post(event())
    assert time.monotonic() - started < 0.1  # posting never waits for the network
    flaky.wait()
    assert notifier.close(10)
    assert flaky.attempts == 3
    retries = log.named("notify_retry")
    assert [(r["kind"], r["retry_in"]) for r in retries] == [("drift", 0.2), ("drift", 0.4)]
    assert [r["error"] for r in retries] == ["HTTP 500", "HTTP 500"]
    assert log.named("notify_sent")[0]["attempts"] == 3
    assert TOKEN not in log.text()


def test_a_4xx_is_final_and_a_refused_connection_is_retried(receivers) -> None:
    gone = receivers("gone")
    log = Lines()
    notifier = webhooks.Notifier(log, retries=2, backoff=0.05)
    closed = receivers()
    dead_url = closed.url
    closed.close()  # nothing listens there any more
    notifier.configure([webhooks.Target("gone", gone.url), webhooks.Target("dead", dead_url)])
    notifier.post(event())
    assert notifier.close(10)
    failed = {f["webhook"]: f for f in log.named("notify_failed")}
    assert failed["gone"]["error"] == "HTTP 404" and failed["gone"]["attempts"] == 1
    assert failed["dead"]["attempts"] == 3 and "ConnectError" in failed["dead"]["error"]
    assert TOKEN not in log.text()


def test_a_hanging_receiver_delays_nothing_else(receivers) -> None:
    hung, fine = receivers("hang"), receivers()
    log = Lines()
    notifier = webhooks.Notifier(log, retries=1, backoff=0.05)
    notifier.configure([webhooks.Target("hung", hung.url, timeout=0.5), webhooks.Target("fine", fine.url)])
    started = time.monotonic()
    for _ in range(3):
        notifier.post(event())
    assert time.monotonic() - started < 0.1
    fine.wait(3, timeout=5)
    assert time.monotonic() - started < 1.5  # the healthy webhook got all three while the other hung
    assert notifier.close(timeout=1.0) is False  # the hung one still holds events: given up at the deadline
    assert time.monotonic() - started < 3
    time.sleep(1.5)
    failed = [f for f in log.named("notify_failed") if f["webhook"] == "hung"]
    assert failed and failed[0]["error"] == "no answer within 0.5s"
    assert TOKEN not in log.text()


def test_a_full_queue_drops_the_oldest(receivers) -> None:
    hung = receivers("hang")
    log = Lines()
    notifier = webhooks.Notifier(log, retries=0, queue_size=2)
    notifier.configure([webhooks.Target("hung", hung.url, timeout=0.3)])
    notifier.post(event("drift"))
    deadline = time.monotonic() + 5
    while hung.attempts < 1:  # the worker is now stuck on `drift`; the queue holds two
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for kind in ("stalled", "recovered", "pruned", "apply-failed"):
        notifier.post(event(kind))
    notifier.close(0.1)
    assert [d["kind"] for d in log.named("notify_dropped")][:2] == ["stalled", "recovered"]


def test_events_filter(receivers) -> None:
    r = receivers()
    notifier = webhooks.Notifier(Lines())
    notifier.configure([webhooks.Target("some", r.url, events=frozenset({"stalled"}))])
    notifier.post(event("drift"))
    notifier.post(event("stalled"))
    notifier.close(10)
    assert [b["event"] for b in r.bodies] == ["stalled"]


# --- end to end: the reconciler and apply --notify ------------------------------------------------


def manifest_with_hooks(folder: Path, bots: list[dict[str, Any]], hooks: list[dict[str, Any]]) -> Path:
    doc = json.loads(fleet_doc(bots))
    doc["spec"]["notifications"] = hooks
    path = folder / "fleet.yaml"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_watch_alerts_on_drift_and_recovery(spawn, manifests: Path, home: Path, receivers) -> None:
    r = receivers()
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}, "events": ["drift", "recovered"]}]
    manifest = manifest_with_hooks(manifests, [{"name": "alpha", "title": "Alpha"}], hooks)
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.5", OPS_HOOK=r.url)
    watch.wait_for("reconciled", timeout=30, result="applied")
    config = home / "profiles" / "alpha" / "profile.yaml"
    time.sleep(0.3)
    config.write_text(config.read_text().replace("Alpha", "Hand Edited"))
    watch.wait_for("reconciled", timeout=30, result="drift")
    drift = next(b for b in r.wait(1) if b["event"] == "drift")
    assert drift["details"]["objects"] == ["bot/alpha"] and drift["fleet"] == "acme"
    time.sleep(1.5)  # more drift runs: no repeat
    assert [b["event"] for b in r.bodies].count("drift") == 1
    assert hermes_fleet("apply", "-f", manifest, "--home", home).code == 0
    watch.wait_for("reconciled", timeout=30, result="in-sync")
    assert [b["event"] for b in r.wait(2)] == ["drift", "recovered"]
    watch.stop()
    assert TOKEN not in watch.transcript() + watch.stderr
    assert TOKEN not in (home / ".hermes-fleet" / "watch-status.json").read_text()


def test_watch_stall_with_a_hanging_and_a_failing_receiver_still_reconciles(
    spawn, manifests: Path, home: Path, receivers
) -> None:
    hung, flaky, fine = receivers("hang"), receivers("fail:1"), receivers()
    hooks = [
        {"name": "hung", "url": {"from_env": "HUNG"}, "timeout": 1},
        {"name": "flaky", "url": {"from_env": "FLAKY"}, "format": "slack", "events": ["stalled"]},
        {"name": "fine", "url": {"from_env": "FINE"}, "events": ["stalled"]},
    ]
    manifest_with_hooks(manifests, [{"name": "alpha"}], hooks)
    watch = spawn("-f", manifests, "--home", home, "--interval", "30", HUNG=hung.url, FLAKY=flaky.url, FINE=fine.url)
    watch.wait_for("reconciled", timeout=30, result="applied")
    (manifests / "fleet.yaml").write_text((manifests / "fleet.yaml").read_text().replace('"alpha"', '"Not A Name"'))
    started = time.monotonic()
    stalled = watch.wait_for("reconciled", timeout=30, result="stalled")
    assert (fine.wait(1)[0]["event"], fine.bodies[0]["severity"]) == ("stalled", "error")
    assert "stalled" in flaky.wait(1)[0]["text"]
    assert flaky.attempts == 2  # one 500, then delivered
    # The webhook config of the stalled (invalid) manifests is not used; the last good one is.
    (manifests / "fleet.yaml").write_text((manifests / "fleet.yaml").read_text().replace('"Not A Name"', '"alpha"'))
    watch.wait_for("reconciled", timeout=30, result="in-sync")
    assert time.monotonic() - started < 15  # the hanging receiver slowed no reconcile
    assert [b["event"] for b in fine.bodies] == ["stalled"]
    assert stalled["result"] == "stalled"
    watch.stop()
    assert TOKEN not in watch.transcript() + watch.stderr


def test_apply_notify_posts_a_prune_and_a_failure(manifests: Path, home: Path, receivers, monkeypatch) -> None:
    r = receivers()
    monkeypatch.setenv("OPS_HOOK", r.url)
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}}]
    two = manifest_with_hooks(manifests, [{"name": "alpha"}, {"name": "beta"}, {"name": "gamma"}, {"name": "delta"}], hooks)
    assert hermes_fleet("apply", "-f", two, "--home", home, "--notify").code == 0
    assert r.bodies == []  # a clean apply says nothing
    one = manifest_with_hooks(manifests, [{"name": "alpha"}, {"name": "beta"}, {"name": "gamma"}], hooks)
    run = hermes_fleet("apply", "-f", one, "--home", home, "--prune", "--notify")
    assert run.code == 0, run.text
    assert [(b["event"], b["details"]["objects"]) for b in r.bodies] == [("pruned", ["bot/delta"])]
    unset = {"OPENROUTER_API_KEY": {"from_env": "NOT_SET_ANYWHERE"}}
    broken = manifest_with_hooks(manifests, [{"name": "alpha", "env": unset}, {"name": "beta"}, {"name": "gamma"}], hooks)
    run = hermes_fleet("apply", "-f", broken, "--home", home, "--notify")
    assert run.code == 1
    failure = r.wait(2)[1]
    assert failure["event"] == "apply-failed" and "bot/alpha" in failure["summary"]
    assert TOKEN not in run.text


def test_health_reaches_metrics(spawn, manifests: Path, home: Path) -> None:
    routine = {"name": "digest", "schedule": "every 1h", "prompt": "Summarise"}
    (manifests / "fleet.yaml").write_text(fleet_doc([{"name": "alpha", "routines": [routine]}, {"name": "beta"}]))
    watch = spawn("-f", manifests, "--home", home, "--interval", "30", "--health-port", "0")
    port = int(watch.wait_for("health_listening", timeout=30)["address"].rsplit(":", 1)[1])
    watch.wait_for("reconciled", timeout=30, result="applied")
    deadline = time.monotonic() + 10
    while True:
        status, _, body = http_get(port, "/metrics")
        if "hermes_fleet_gateway_up" in body or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200
    assert sample(body, "hermes_fleet_gateway_up", bot="alpha") == 0
    assert sample(body, "hermes_fleet_health_findings", code="gateway-down") == 1  # alpha has a routine and no gateway
    assert sample(body, "hermes_fleet_health_findings", code="credentials-missing") == 2
    assert sample(body, "hermes_fleet_health_findings", code="routine-failed") == 0
    assert sample(body, "hermes_fleet_routines_failed", bot="alpha") == 0
    assert sample(body, "hermes_fleet_credentials_missing", bot="beta") == 1
    assert sample(body, "hermes_fleet_gateway_up", bot="alpha", fleet="acme") == 0, "health samples carry the fleet label"
