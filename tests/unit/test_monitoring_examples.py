"""examples/monitoring/: the alert rules pass `promtool check rules` and their own unit tests
(`promtool test rules`), the scrape config passes `promtool check config`, and the dashboard asks
only for metrics a reconciler really exposes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from ruamel.yaml import YAML

from controller.codes import WatchResult
from controller.core import health as health_core
from controller.engine import watching
from controller.engine.metrics import Metrics
from tests.tools import require_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "monitoring"


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_the_alert_rules_check_and_pass_their_unit_tests() -> None:
    promtool = require_tool("promtool")
    checked = _run(promtool, "check", "rules", "alerts.yml", cwd=EXAMPLES)
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = _run(promtool, "test", "rules", "alerts.test.yml", cwd=EXAMPLES)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_a_broken_alert_rule_fails_its_unit_test(tmp_path: Path) -> None:
    """The unit tests can fail: a rule whose `for:` is too long no longer fires when expected."""
    promtool = require_tool("promtool")
    shutil.copy(EXAMPLES / "alerts.test.yml", tmp_path)
    rules = (EXAMPLES / "alerts.yml").read_text()
    (tmp_path / "alerts.yml").write_text(rules.replace("for: 10m", "for: 30m", 1))
    tested = _run(promtool, "test", "rules", "alerts.test.yml", cwd=tmp_path)
    assert tested.returncode != 0 and "HermesFleetStalled" in tested.stdout + tested.stderr


def test_the_scrape_config_checks(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    yaml = YAML(typ="safe", pure=True)
    config = yaml.load((EXAMPLES / "prometheus.yml").read_text())
    token = tmp_path / "hermes-fleet.token"
    token.write_text("t" * 32 + "\n")
    job = config["scrape_configs"][0]
    assert job["authorization"] == {"type": "Bearer", "credentials_file": "/etc/prometheus/hermes-fleet.token"}
    job["authorization"]["credentials_file"] = str(token)
    with (tmp_path / "prometheus.yml").open("w") as out:
        yaml.dump(config, out)
    shutil.copy(EXAMPLES / "alerts.yml", tmp_path)
    checked = _run(promtool, "check", "config", "prometheus.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 6 rules found" in checked.stdout


def test_the_dashboard_and_the_rules_ask_only_for_exposed_metrics() -> None:
    metrics = Metrics("alpha", 120.0)
    metrics.observe_slice("acme", ["a1"])
    metrics.observe_routines({("a1", "Morning"): False})
    metrics.record(
        watching.Run(at="now", trigger="start", result=WatchResult.APPLIED, revision="abc"),
        now=1.0,
        failures=0,
        good_revision="abc",
    )
    gateway = health_core.GatewayRuntime(running=False)
    bot = health_core.BotRuntime("a1", "openrouter", frozenset(), frozenset(), 1.0, None, gateway)
    metrics.observe_health(health_core.Health(bots=(bot,), now=2.0))
    body, _ = metrics.render()
    exposed = set(re.findall(r"^(hermes_fleet_[a-z_]+)", body.decode(), re.MULTILINE)) | {"up"}
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs.append(next(v["query"] for v in dashboard["templating"]["list"] if v["name"] == "host"))
    exprs += re.findall(r"expr: (.+)", (EXAMPLES / "alerts.yml").read_text())
    asked = {m for e in exprs for m in re.findall(r"\b(hermes_fleet_[a-z_]+|up)\b", e)}
    assert asked and asked <= exposed, asked - exposed
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in dashboard["panels"])
