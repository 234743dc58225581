"""controller/hermes/vocabulary.py and config_keys.py are the installed hermes-agent 0.19.0's own
registries: each table is compared with what Hermes' python imports (so they cannot go stale),
and each enum with what its reader really does with every value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.hermes import config_keys, providers, vocabulary
from tests.adapters.conftest import RealHermes

pytestmark = pytest.mark.hermes

_READ = r"""
import ast, inspect, json, textwrap
import toolsets, model_tools  # model_tools loads the tools, which register their toolsets
from hermes_cli import auth, config, tools_config
from tools import approval, browser_supervisor, code_execution_tool, tts_tool
import gateway.run as gateway_run

ENUMS = json.loads(INPUT)
out = {}
out["toolsets"] = sorted(toolsets.get_toolset_names())
out["wildcards"] = sorted(n for n in ("all", "*") if toolsets.validate_toolset(n))
out["no_mcp"] = '"no_mcp" in toolset_names' in inspect.getsource(tools_config._get_platform_tools)

out["registry"] = sorted(k for k, v in auth.PROVIDER_REGISTRY.items() if k == v.id)
tree = ast.parse(textwrap.dedent(inspect.getsource(auth.resolve_provider)))
assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
table = next(n.value for n in assigns if getattr(n.targets[0], "id", "") == "_PROVIDER_ALIASES")
aliases = ast.literal_eval(table)
from providers import list_providers
for plugin in list_providers():
    for alias in plugin.aliases:
        aliases.setdefault(alias, plugin.name)
out["aliases"] = {k: v for k, v in aliases.items() if k != v}
resolved = {}
for name in ("openrouter", "custom", "OpenRouter"):
    resolved[name] = auth.resolve_provider(name)
out["resolved"] = resolved
from hermes_cli import runtime_provider
runtime = inspect.getsource(runtime_provider.resolve_runtime_provider).splitlines()
line = next(line for line in runtime if 'requested_provider in ("vertex"' in line)
out["vertex"] = ast.literal_eval(line.split(" in ", 1)[1].rstrip(":").strip())

def cron_mode(value):
    config.load_config = lambda: {"approvals": {"cron_mode": value}}
    return approval._get_cron_approval_mode()

def busy(value):
    gateway_run._load_gateway_runtime_config = lambda: {"display": {"busy_input_mode": value}}
    return gateway_run.GatewayRunner._load_busy_input_mode()

def execution(value):
    code_execution_tool._load_config = lambda: {"mode": value}
    return code_execution_tool._get_execution_mode()

readers = {
    "approvals.mode": approval._normalize_approval_mode,
    "approvals.cron_mode": cron_mode,
    "display.busy_input_mode": busy,
    "code_execution.mode": execution,
    "tts.provider": lambda v: tts_tool._get_provider({"provider": v}),
}
def read(key, value):
    try:
        return readers[key](value)
    except Exception as exc:  # tts_tool._get_provider on a boolean: AttributeError
        return f"error: {type(exc).__name__}"
out["read"] = {key: [read(key, v) for v in values] for key, values in ENUMS.items() if key in readers}
out["tts"] = sorted(tts_tool.BUILTIN_TTS_PROVIDERS)
out["dialog"] = sorted(browser_supervisor._VALID_POLICIES)
out["execution_modes"] = list(code_execution_tool.EXECUTION_MODES)

def walk(node, path, tree):
    tree[path] = sorted(node)
    for key, value in node.items():
        if isinstance(value, dict):
            walk(value, f"{path}.{key}" if path else key, tree)
    return tree
out["tree"] = walk(config.DEFAULT_CONFIG, "", {})
out["extra"] = sorted(config._EXTRA_KNOWN_ROOT_KEYS)
out["open"] = sorted(config._OPEN_DICT_TOP_LEVEL_KEYS)
out["first"] = sorted(config._SCHEMA_DEFINED_DICT_KEYS | config._DYNAMIC_TOP_LEVEL_KEYS)
out["platforms"] = sorted(config._PLATFORM_CONTAINER_KEYS)
out["validate"] = {key: list(config._validate_config_key(key)) for key in json.loads(KEYS)}
print(json.dumps(out))
"""

# Keys whose verdicts must agree with Hermes' own `_validate_config_key` (`hermes config set`).
_KEYS = [
    "display.show_reasoning",
    "display.show_reasonin",
    "aprovals.mode",
    "approvals.mode",
    "agent.max_turns",
    "agent.max_turn",
    "gateway.platforms.telegram.extra",
    "discord.anything.below",
    "mcp_servers.crm.command",
    "model.provider",
    "memory.memory_char_limt",
]


def _probe_values() -> dict[str, list[Any]]:
    """Each enum value as written, upper-cased when the reader folds case, and one it does not take."""
    out: dict[str, list[Any]] = {}
    for key, spec in vocabulary.ENUMS.items():
        values: list[Any] = list(spec.values)
        if spec.fold:
            values += [v.upper() for v in spec.values]
        out[key] = [*values, "no-such-value", True, False]
    return out


@pytest.fixture(scope="module")
def hermes_tables(hermes_module: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("vocab-home")
    code = f"INPUT = {json.dumps(json.dumps(_probe_values()))}\nKEYS = {json.dumps(json.dumps(_KEYS))}\n{_READ}"
    return json.loads(hermes_module.python(code, home).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hermes_module(tmp_path_factory: pytest.TempPathFactory) -> RealHermes:
    from tests.hermes_support import HermesCLI, hermes_bin

    binary = hermes_bin()
    if binary is None:
        pytest.skip("hermes-agent 0.19.0 is not installed")
    scratch = tmp_path_factory.mktemp("vocab")
    return RealHermes(HermesCLI(binary, scratch / "root", scratch))


def test_toolset_names_are_hermes_own(hermes_tables: dict[str, Any]) -> None:
    assert set(hermes_tables["toolsets"]) == vocabulary.TOOLSETS_0_19
    assert set(hermes_tables["wildcards"]) == vocabulary.TOOLSET_WILDCARDS
    assert hermes_tables["no_mcp"]


def test_provider_names_are_hermes_own(hermes_tables: dict[str, Any]) -> None:
    builtin = vocabulary.PROVIDERS_0_19 - {"auto"}
    assert builtin == set(hermes_tables["registry"]) | {"openrouter", "custom"}
    vertex = {alias: "vertex" for alias in vocabulary.VERTEX - {"vertex", "vertexai"}}
    assert hermes_tables["aliases"] == providers.ALIASES | vertex  # the plugin's aliases included
    assert set(hermes_tables["vertex"]) == vocabulary.VERTEX
    assert hermes_tables["resolved"] == {"openrouter": "openrouter", "custom": "custom", "OpenRouter": "openrouter"}


def test_each_enum_is_what_its_reader_takes(hermes_tables: dict[str, Any]) -> None:
    assert set(hermes_tables["tts"]) == set(vocabulary.TTS_PROVIDERS)
    assert set(hermes_tables["dialog"]) == set(vocabulary.ENUMS["browser.dialog_policy"].values)
    assert hermes_tables["execution_modes"] == list(vocabulary.ENUMS["code_execution.mode"].values)
    probes = _probe_values()
    for key, results in hermes_tables["read"].items():
        spec = vocabulary.ENUMS[key]
        for value, read in zip(probes[key], results, strict=True):
            taken = vocabulary.enum_problem(key, value) is None
            if isinstance(value, str) and taken:  # the reader keeps a value the table takes
                kept = value.strip().lower() if spec.fold else value
                if key == "approvals.cron_mode":  # off, allow and yes are its synonyms of approve
                    kept = "deny" if kept == "deny" else "approve"
                assert read == kept, (key, value, read)
            if key == "approvals.mode" and isinstance(value, bool):
                assert read == ("off" if value is False else "manual")
        # and gives anything else one fixed meaning, which the table names in `otherwise`
        assert results[-3] in spec.otherwise or key == "tts.provider", (key, results[-3])


def test_the_config_key_tree_is_default_config(hermes_tables: dict[str, Any]) -> None:
    ours = {branch: sorted(config_keys._children(branch)) for branch in config_keys.KEY_TREE}
    assert ours == hermes_tables["tree"]
    assert set(hermes_tables["extra"]) == config_keys.EXTRA_ROOTS
    assert set(hermes_tables["open"]) == config_keys.OPEN_ROOTS
    assert set(hermes_tables["first"]) == config_keys.FIRST_SEGMENT_ROOTS
    assert set(hermes_tables["platforms"]) == config_keys.PLATFORM_CONTAINERS


def test_unknown_keys_agree_with_hermes_config_set(hermes_tables: dict[str, Any]) -> None:
    for key, (known, suggestion) in hermes_tables["validate"].items():
        ours = config_keys.unknown(key)
        assert (ours is None) == known, key
        if ours is not None and suggestion is not None:
            assert ours[1] == suggestion, key


def test_the_installed_hermes_is_the_target(real_hermes: RealHermes, tmp_path: Path) -> None:
    assert real_hermes.python("import importlib.metadata as m; print(m.version('hermes-agent'))", tmp_path).strip() == "0.19.0"
