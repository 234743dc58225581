"""hermes_defaults: the typed-in 0.19 defaults match the real DEFAULT_CONFIG; effective_value."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from controller.adapters import hermes_defaults
from controller.adapters.configfile import ConfigDoc
from controller.adapters.hermes_defaults import effective_value

# --- a small private runner for the real hermes 0.19 CLI --------------------------------------

_DEFAULT_BIN = Path.home() / ".cache/hermes-fleet/hermes-agent-0.19.0/bin/hermes"


class _Hermes:
    def __init__(self, binary: Path, tmp: Path) -> None:
        self.binary = binary
        self.root = tmp / "root"
        self.home = tmp / "home"
        self.root.mkdir()
        self.home.mkdir()

    def env(self, hermes_home: Path) -> dict[str, str]:
        # Nothing of the real user's Hermes state, and no proxy (these tests run offline).
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("HERMES_") and "proxy" not in k.lower()}
        env.update(HOME=str(self.home), HERMES_HOME=str(hermes_home), NO_COLOR="1", TERM="dumb")
        return env

    def run(self, *args: str, profile: str | None = None) -> subprocess.CompletedProcess[str]:
        argv = [str(self.binary), *(["-p", profile] if profile else []), *args]
        proc = subprocess.run(argv, env=self.env(self.root), cwd=self.home, capture_output=True,
                              text=True, timeout=120, input="")
        assert proc.returncode == 0, f"{argv} rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc

    def python(self, code: str, hermes_home: Path, stdin: str = "") -> str:
        proc = subprocess.run([str(self.binary.parent / "python"), "-c", code], env=self.env(hermes_home),
                              cwd=self.home, capture_output=True, text=True, timeout=120, input=stdin)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def create_profile(self, name: str) -> Path:
        self.run("profile", "create", name, "--no-alias")
        return self.root / "profiles" / name


@pytest.fixture
def real_hermes(tmp_path: Path) -> _Hermes:
    binary = Path(os.environ.get("HERMES_FLEET_HERMES_BIN") or _DEFAULT_BIN)
    if not binary.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"hermes binary not found at {binary}")
        pytest.skip(f"hermes binary not found at {binary}")
    return _Hermes(binary, tmp_path)


def test_effective_value_prefers_the_live_value():
    doc = ConfigDoc.parse("checkpoints:\n  enabled: true\n")
    assert effective_value(doc, "checkpoints.enabled") == (True, True)
    assert effective_value(doc, "checkpoints.max_snapshots") == (True, 20)
    assert effective_value(doc, "approvals.mode") == (True, "smart")
    assert effective_value(doc, "gateway.bot_loop_guard.cooldown_seconds") == (True, 600)
    assert effective_value(doc, "not.a.known.key") == (False, None)


def test_defaults_are_copied_out():
    doc = ConfigDoc.parse("")
    _, toolsets = effective_value(doc, "toolsets")
    toolsets.append("mutated")
    assert effective_value(doc, "toolsets") == (True, ["hermes-cli"])


def test_all_eight_checkpoint_keys_are_listed():
    keys = [k for k in hermes_defaults.HERMES_0_19_DEFAULTS if k.startswith("checkpoints.")]
    assert len(keys) == 8


_DUMP_DEFAULTS = (
    "import json\n"
    "from hermes_cli.config import DEFAULT_CONFIG\n"
    "print(json.dumps(DEFAULT_CONFIG, default=repr))\n"
)


def _dig(tree: dict, dotted: str) -> tuple[bool, object]:
    node: object = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


@pytest.mark.hermes
def test_defaults_equal_the_real_0_19_default_config(real_hermes: _Hermes, tmp_path: Path):
    real = json.loads(real_hermes.python(_DUMP_DEFAULTS, tmp_path))
    assert real["_config_version"] == 33
    for key, value in hermes_defaults.HERMES_0_19_DEFAULTS.items():
        present, actual = _dig(real, key)
        assert present, f"{key} is not in 0.19's DEFAULT_CONFIG"
        assert actual == value and type(actual) is type(value), key
    # The other two tables must really be absent from 0.19's DEFAULT_CONFIG.
    for key in [*hermes_defaults.HERMES_0_19_READER_DEFAULTS, *hermes_defaults.MAIN_BOT_MODE_DEFAULTS]:
        assert not _dig(real, key)[0], f"{key} is in 0.19's DEFAULT_CONFIG; move it to HERMES_0_19_DEFAULTS"
