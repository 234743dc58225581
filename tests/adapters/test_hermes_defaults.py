"""hermes.defaults: the typed-in 0.19 defaults match the real DEFAULT_CONFIG; lookup and default_for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.hermes import defaults as hermes_defaults
from controller.hermes.defaults import default_for, lookup
from tests.adapters.conftest import RealHermes


def test_lookup_finds_live_values_and_default_for_knows_hermes_defaults():
    doc = {"checkpoints": {"enabled": True}}
    assert lookup(doc, "checkpoints.enabled") == (True, True)
    assert lookup(doc, "checkpoints.max_snapshots") == (False, None)
    assert default_for("checkpoints.max_snapshots") == (True, 20)
    assert default_for("approvals.mode") == (True, "smart")
    assert default_for("gateway.bot_loop_guard.cooldown_seconds") == (True, 600)
    assert default_for("not.a.known.key") == (False, None)


def test_defaults_are_copied_out():
    _, toolsets = default_for("toolsets")
    toolsets.append("mutated")
    assert default_for("toolsets") == (True, ["hermes-cli"])


def test_all_eight_checkpoint_keys_are_listed():
    keys = [k for k in hermes_defaults.HERMES_0_19_DEFAULTS if k.startswith("checkpoints.")]
    assert len(keys) == 8


_DUMP_DEFAULTS = "import json\nfrom hermes_cli.config import DEFAULT_CONFIG\nprint(json.dumps(DEFAULT_CONFIG, default=repr))\n"


def _dig(tree: dict, dotted: str) -> tuple[bool, object]:
    node: object = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


@pytest.mark.hermes
def test_defaults_equal_the_real_0_19_default_config(real_hermes: RealHermes, tmp_path: Path):
    real = json.loads(real_hermes.python(_DUMP_DEFAULTS, tmp_path))
    assert real["_config_version"] == 33
    for key, value in hermes_defaults.HERMES_0_19_DEFAULTS.items():
        present, actual = _dig(real, key)
        assert present, f"{key} is not in 0.19's DEFAULT_CONFIG"
        assert actual == value and type(actual) is type(value), key
    # The other two tables must really be absent from 0.19's DEFAULT_CONFIG.
    for key in [*hermes_defaults.HERMES_0_19_READER_DEFAULTS, *hermes_defaults.MAIN_BOT_MODE_DEFAULTS]:
        assert not _dig(real, key)[0], f"{key} is in 0.19's DEFAULT_CONFIG; move it to HERMES_0_19_DEFAULTS"
