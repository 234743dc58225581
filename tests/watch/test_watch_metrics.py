"""Metrics for a fleet-wide view: the Prometheus client library's exposition, `fleet` and `host`
labels, per-bot drift and routine health, a bind address with a bearer token, and a real
Prometheus scraping a real reconciler with the example scrape config and alert rules.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.tools import require_tool
from tests.watch.harness import REPO, cli, http_get, sample, write_fleet

EXAMPLES = REPO / "examples" / "monitoring"
TOKEN = "metrics-token-" + "x" * 24


def _fleet(manifests: Path) -> Path:
    return write_fleet(
        manifests / "fleet.yaml",
        [
            {"name": "a1", "title": "One", "routines": [{"name": "Morning", "schedule": "every 1h", "prompt": "Say hi."}]},
            {"name": "a2", "title": "Two", "soul": "Original soul."},
        ],
    )


def _port(watch: Any) -> int:
    return int(watch.wait_for("health_listening")["address"].rsplit(":", 1)[1])


def test_every_sample_has_fleet_and_host_with_per_bot_drift_and_routine_health(spawn, manifests: Path, home: Path) -> None:
    _fleet(manifests)
    watch = spawn("-f", manifests, "--home", home, "--host", "alpha", "--interval", "0.5", "--health-port", "0")
    port = _port(watch)
    watch.wait_for("reconciled", trigger="start", result="applied")
    watch.wait_for("reconciled", result="in-sync")
    body = http_get(port, "/metrics")[2]
    families = {name for name, _ in _samples(body)}
    for name, labels in _samples(body):
        assert {"fleet": "acme", "host": "alpha"}.items() <= dict(labels).items(), (name, labels)
    assert {"hermes_fleet_bot_drifted", "hermes_fleet_routine_failing", "hermes_fleet_revision_info"} <= families
    assert sample(body, "hermes_fleet_bot_drifted", bot="a1") == 0 and sample(body, "hermes_fleet_bot_drifted", bot="a2") == 0
    assert sample(body, "hermes_fleet_routine_failing", bot="a1", routine="Morning") == 0
    assert sample(body, "hermes_fleet_interval_seconds") == 0.5

    # A hand edit of a2's persona, and a failed last run of a1's routine (what Hermes' scheduler records).
    (home / "profiles" / "a2" / "SOUL.md").write_text("Edited by hand.\n")
    store = home / "profiles" / "a1" / "cron" / "jobs.json"
    data = json.loads(store.read_text())
    jobs = data["jobs"] if isinstance(data, dict) else data
    for job in jobs:
        job["last_status"], job["last_error"] = "error", "provider timed out"
    store.write_text(json.dumps(data))
    run = watch.wait_for("reconciled", result="drift", timeout=10)
    assert run["drift"] == ["bot/a2"] or run["drift"] == "bot/a2", watch.transcript()
    body = http_get(port, "/metrics")[2]
    assert sample(body, "hermes_fleet_bot_drifted", bot="a2") == 1
    assert sample(body, "hermes_fleet_bot_drifted", bot="a1") == 0
    assert sample(body, "hermes_fleet_drifted_objects") == 1
    assert sample(body, "hermes_fleet_routine_failing", bot="a1", routine="Morning") == 1
    assert sample(body, "hermes_fleet_reconcile_total", result="drift") >= 1
    assert watch.stop() == 0


def test_openmetrics_on_request_and_promtool_accepts_the_exposition(spawn, manifests: Path, home: Path) -> None:
    promtool = require_tool("promtool")
    _fleet(manifests)
    watch = spawn("-f", manifests, "--home", home, "--interval", "300", "--health-port", "0")
    port = _port(watch)
    watch.wait_for("reconciled", trigger="start", result="applied")
    code, kind, body = http_get(port, "/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"})
    assert code == 200 and kind.startswith("application/openmetrics-text") and body.endswith("# EOF\n")
    code, kind, body = http_get(port, "/metrics")
    assert kind.startswith("text/plain; version=0.0.4")
    lint = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=30, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert watch.stop() == 0


def test_a_bind_beyond_loopback_needs_a_token_which_guards_both_endpoints(user: Path, spawn, manifests: Path, home: Path) -> None:
    _fleet(manifests)
    refused = cli(user, "watch", "-f", manifests, "--home", home, "--health-port", "0", "--health-bind", "0.0.0.0")
    assert refused.returncode == 2 and "refusing to serve /healthz and /metrics on 0.0.0.0 without a token" in refused.stderr
    weak = cli(user, "watch", "-f", manifests, "--home", home, "--health-port", "0", "--health-token-env", "WEAK", WEAK="short")
    assert weak.returncode == 2 and "at least 16 characters" in weak.stderr and "short" not in weak.stderr
    unset = cli(user, "watch", "-f", manifests, "--home", home, "--health-port", "0", "--health-token-env", "UNSET_TOKEN_VAR")
    assert unset.returncode == 2 and "UNSET_TOKEN_VAR" in unset.stderr
    assert not home.exists(), "a refused start touches nothing"

    token_file = manifests.parent / "metrics.token"
    token_file.write_text(TOKEN + "\n")
    watch = spawn(
        "-f", manifests, "--home", home, "--health-port", "0", "--health-bind", "0.0.0.0",
        "--health-token-file", token_file, "--interval", "300", log_format="text",
    )  # fmt: skip
    listening = watch.wait_for("health_listening")
    assert listening["address"].startswith("http://0.0.0.0:") and listening["auth"] == "bearer"
    port = int(listening["address"].rsplit(":", 1)[1])
    watch.wait_for("reconciled", trigger="start", result="applied")
    for path in ("/metrics", "/healthz"):
        assert http_get(port, path)[0] == 401
        assert http_get(port, path, {"Authorization": "Bearer " + "y" * 38})[0] == 401
        assert http_get(port, path, {"Authorization": TOKEN})[0] == 401
        assert http_get(port, path, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    other = _outside_address()
    if other:  # reachable on this machine's own non-loopback address too
        assert http_get(port, "/healthz", {"Authorization": f"Bearer {TOKEN}"}, host=other)[0] == 200
    assert watch.stop() == 0
    status = (home / ".hermes-fleet" / "watch-status.json").read_text()
    assert TOKEN not in "\n".join(watch.lines) + watch.stderr + status


def test_prometheus_scrapes_with_the_example_config_and_loads_the_alert_rules(
    spawn, manifests: Path, home: Path, tmp_path: Path
) -> None:
    prometheus = require_tool("prometheus")
    _fleet(manifests)
    token_file = tmp_path / "metrics.token"
    token_file.write_text(TOKEN + "\n")
    watch = spawn(
        "-f", manifests, "--home", home, "--host", "alpha", "--interval", "300", "--health-port", "0",
        "--health-bind", "0.0.0.0", "--health-token-file", token_file,
    )  # fmt: skip
    port = _port(watch)
    watch.wait_for("reconciled", trigger="start", result="applied")

    # The example config, pointed at this reconciler; a second job with a wrong token must be refused.
    yaml = YAML(typ="safe", pure=True)
    config = yaml.load((EXAMPLES / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(EXAMPLES / "alerts.yml")]
    job = config["scrape_configs"][0]
    job["authorization"]["credentials_file"] = str(token_file)
    job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
    wrong = tmp_path / "wrong.token"
    wrong.write_text("z" * 40 + "\n")
    config["scrape_configs"].append(
        {**job, "job_name": "wrong-token", "authorization": {"type": "Bearer", "credentials_file": str(wrong)}}
    )
    config_file = tmp_path / "prometheus.yml"
    with config_file.open("w") as out:
        yaml.dump(config, out)
    web = _free_port()
    server = subprocess.Popen(
        [prometheus, f"--config.file={config_file}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        targets = _until(web, "/api/v1/targets", lambda d: len(_healths(d)) == 2 and "unknown" not in _healths(d).values())
        health = _healths(targets)
        assert health == {"hermes-fleet": "up", "wrong-token": "down"}, targets
        refused = next(t for t in targets["data"]["activeTargets"] if t["labels"]["job"] == "wrong-token")
        assert "401" in refused["lastError"]
        result = _until(
            web, "/api/v1/query?query=" + urllib.parse.quote("hermes_fleet_bot_drifted"), lambda d: d["data"]["result"]
        )
        series = result["data"]["result"]
        assert {s["metric"]["bot"] for s in series} == {"a1", "a2"}
        assert all(s["metric"]["fleet"] == "acme" and s["metric"]["host"] == "alpha" for s in series), series
        rules = _until(web, "/api/v1/rules", lambda d: _rule_healths(d) and set(_rule_healths(d).values()) == {"ok"})
        assert set(_rule_healths(rules)) == {
            "HermesFleetReconcilerDown", "HermesFleetStalled", "HermesFleetNotConverging", "HermesFleetDrift",
            "HermesFleetRoutineFailing", "HermesFleetRoutinesNotFiring",
        }  # fmt: skip
    finally:
        server.terminate()
        try:
            _, err = server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    assert TOKEN not in (err or "")
    assert watch.stop() == 0


# --- helpers ----------------------------------------------------------------------------------------


def _samples(body: str) -> list[tuple[str, frozenset[tuple[str, str]]]]:
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, frozenset(s.labels.items())) for f in text_string_to_metric_families(body) for s in f.samples]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _outside_address() -> str | None:
    """One of this machine's own addresses that is not loopback, if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent for a UDP connect
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if address.startswith("127.") else address


def _get(port: int, path: str) -> dict[str, Any]:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read())


def _until(port: int, path: str, ready: Any, timeout: float = 45.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = _get(port, path)
            if ready(last):
                return last
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"prometheus {path} never got ready within {timeout}s: {json.dumps(last)[:3000]}")


def _healths(targets: dict[str, Any]) -> dict[str, str]:
    return {t["labels"]["job"]: t["health"] for t in targets["data"]["activeTargets"]}


def _rule_healths(rules: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["health"] for g in rules["data"]["groups"] for r in g["rules"]}
