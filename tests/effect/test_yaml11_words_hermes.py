"""`off`/`on`/`yes`/`no` under `config:` mean in Hermes what they would mean in its own config.yaml.

Hermes 0.19.0 loads config.yaml with PyYAML (YAML 1.1: an unquoted `off` is False); manifests are
YAML 1.2 (`off` is a string). A manifest with `show_reasoning: off` is applied, then Hermes' own
readers run under the bot's HERMES_HOME: the CLI (`cli.py` CLI_CONFIG, read by plain truthiness,
so a string 'off' would show reasoning) and the gateway (`gateway/run.py:_load_show_reasoning`).
A quoted `'off'` stays the string.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply, profile, read_yaml

pytestmark = pytest.mark.hermes

MANIFEST = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: words}
spec:
  bots:
    - name: alpha
      model: {provider: openrouter, default: anthropic/claude-sonnet-4}
      config:
        display:
          show_reasoning: off         # as copied from a Hermes config.yaml: False there
          memory_notifications: 'off' # quoted: the string, in both YAMLs
        approvals: {mode: Off}
        compression: {enabled: NO}
"""

READ = """\
import json
import cli
from gateway.run import GatewayRunner
from tools.approval import _get_approval_mode
from hermes_cli.config import load_config
display = cli.CLI_CONFIG["display"]
print(json.dumps({
    "cli_show_reasoning": display.get("show_reasoning", True),
    "gateway_show_reasoning": GatewayRunner._load_show_reasoning(),
    "memory_notifications": load_config()["display"]["memory_notifications"],
    "approvals": _get_approval_mode(),
    "compression": load_config()["compression"]["enabled"],
}))
"""


def test_unquoted_yaml_1_1_words_are_what_hermes_reads(hermes: HermesCLI, tmp_path: Path) -> None:
    manifest = tmp_path / "fleet.yaml"
    manifest.write_text(MANIFEST)
    home = tmp_path / "fleet-home"
    home.mkdir()
    run = apply(manifest, home, "--hermes-version", "0.19.0")
    assert run.code == 0, run.text
    written = read_yaml(profile(home, "alpha") / "config.yaml")
    assert written["display"]["show_reasoning"] is False
    assert written["display"]["memory_notifications"] == "off"
    real = HermesCLI(hermes.binary, home, hermes.userhome.parent)
    done = subprocess.run(
        [str(real.python_bin), "-c", READ], env=real.env("alpha"), capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "cli_show_reasoning": False,
        "gateway_show_reasoning": False,
        "memory_notifications": "off",
        "approvals": "off",
        "compression": False,
    }
