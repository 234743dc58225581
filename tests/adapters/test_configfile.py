"""ConfigDoc: round-trip editing of config.yaml, checked against PyYAML and the real Hermes 0.19."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from controller.adapters.configfile import ConfigDoc
from controller.errors import HermesStateError, RefusedValue
from controller.hermes.defaults import default_for, lookup
from tests.adapters.conftest import RealHermes

SAMPLE = """\
# Hermes config, edited by hand
model:
  provider: openrouter   # the router
  default: anthropic/claude-sonnet-4

# approvals block
approvals:
  mode: off
  timeout: 60
toolsets:
    - hermes-cli
    - web
custom_fleet_key: {a: 1}
_config_version: 33
# trailing comment
"""


def test_get_returns_plain_values():
    doc = ConfigDoc.parse(SAMPLE)
    assert doc.get("model") == (True, {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"})
    assert type(doc.get("model")[1]) is dict
    assert type(doc.get("toolsets")[1]) is list
    assert doc.get("approvals.mode") == (True, False)  # PyYAML (YAML 1.1): `off` is false
    assert doc.get("approvals.missing") == (False, None)
    assert doc.get("model.provider.deeper") == (False, None)


def test_shared_plain_is_one_read_only_object_that_writes_never_touch():
    text = "model:\n  default: m1\ntoolsets:\n  - web\n  - terminal\n"
    one, two = ConfigDoc.parse(text), ConfigDoc.parse(text)
    view = one.shared_plain()
    assert view == {"model": {"default": "m1"}, "toolsets": ["web", "terminal"]}
    assert two.shared_plain() is view  # the memo's one copy, no walk per reader
    assert one.as_dict() == view and one.as_dict() is not view  # as_dict still copies
    one.set("model.default", "m2")
    assert one.shared_plain() is None  # a changed document answers from its own tree
    assert one.get("model.default") == (True, "m2")
    assert view["model"]["default"] == "m1" and ConfigDoc.parse(text).get("model.default") == (True, "m1")


def test_equal_set_is_a_byte_for_byte_no_op():
    doc = ConfigDoc.parse(SAMPLE)
    assert doc.set("approvals.mode", False) is False
    assert doc.set("toolsets", ["hermes-cli", "web"]) is False
    assert doc.set("model", {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"}) is False
    assert doc.changed is False
    assert doc.render() == SAMPLE


def test_bool_and_int_are_not_equal():
    doc = ConfigDoc.parse("a: 1\n")
    assert doc.set("a", True) is True
    assert doc.get("a") == (True, True)


def test_set_keeps_comments_order_and_unknown_keys():
    doc = ConfigDoc.parse(SAMPLE)
    assert doc.set("approvals.timeout", 120) is True
    assert doc.set("checkpoints.enabled", True) is True
    text = doc.render()
    for needle in (
        "# Hermes config, edited by hand",
        "# the router",
        "# approvals block",
        "# trailing comment",
        "custom_fleet_key: {a: 1}",
        "_config_version: 33",
        "    - hermes-cli",
    ):
        assert needle in text
    keys = list(ConfigDoc.parse(text).as_dict())
    assert keys == ["model", "approvals", "toolsets", "custom_fleet_key", "_config_version", "checkpoints"]
    assert ConfigDoc.parse(text).get("approvals.timeout") == (True, 120)


def test_merge_of_a_mapping_keeps_sibling_comments():
    doc = ConfigDoc.parse(SAMPLE)
    doc.set("model", {"provider": "anthropic", "default": "anthropic/claude-sonnet-4"})
    assert "default: anthropic/claude-sonnet-4" in doc.render()
    assert doc.get("model.provider") == (True, "anthropic")


def test_delete_removes_empty_parents_and_keeps_next_comment():
    doc = ConfigDoc.parse("a:\n  b:\n    c: 1\nx: 1\n# about y\ny: 2\n")
    assert doc.delete("a.b.c") is True
    assert doc.get("a") == (False, None)
    assert doc.delete("a.b.c") is False
    assert doc.delete("x") is True
    assert doc.render() == "# about y\ny: 2\n"
    doc = ConfigDoc.parse("w: 0\nx: 1\n# about y\ny: 2\n")
    doc.delete("x")
    assert doc.render() == "w: 0\n# about y\ny: 2\n"


def test_scalar_intermediate_becomes_a_mapping():
    doc = ConfigDoc.parse('model: "gpt-4"\n')
    doc.set("model.provider", "openrouter")
    assert doc.get("model") == (True, {"provider": "openrouter"})


def test_strings_that_pyyaml_would_misread_are_quoted():
    yaml = pytest.importorskip("yaml")
    values = [
        "on",
        "off",
        "yes",
        "no",
        "y",
        "n",
        "1e3",
        "0755",
        "1:30",
        "~",
        "null",
        "",
        "2024-01-01",
        "a: b",
        "- x",
        "#x",
        "'q'",
        "multi\nline",
        " lead",
        1e-05,
        0.5,
        None,
        True,
        7,
    ]
    doc = ConfigDoc.parse(SAMPLE)
    doc.set("probe", values)
    assert yaml.safe_load(doc.render())["probe"] == values
    scalars = "a: [y, n, yes, off, 1e3, 1.0e+3, 0755, 1:30, ~, .5, 0x1f]\n"
    assert ConfigDoc.parse(scalars).get("a")[1] == yaml.safe_load(scalars)["a"]


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a."])
def test_empty_segments_are_refused(bad):
    with pytest.raises(RefusedValue, match="empty"):
        ConfigDoc.parse("").get(bad)


def test_parse_error_names_line_and_column(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  provider: x\n  bad: [unclosed\nother: 1\n")
    with pytest.raises(HermesStateError) as info:
        ConfigDoc.load(path)
    assert info.value.message.startswith(f"{path}:4:6: ")
    assert "never overwrites a config.yaml it cannot parse" in str(info.value)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(HermesStateError, match="not a mapping"):
        ConfigDoc.load(path)


def test_duplicate_keys_are_refused_without_echoing_values():
    with pytest.raises(HermesStateError, match="duplicate key") as info:
        ConfigDoc.parse("api_key: sk-secret-1\napi_key: sk-secret-2\n")
    assert "sk-secret" not in str(info.value)


def test_missing_and_empty_files(tmp_path: Path):
    missing = ConfigDoc.load(tmp_path / "config.yaml")
    assert missing.exists is False and missing.get("a") == (False, None)
    (tmp_path / "empty.yaml").write_text("")
    empty = ConfigDoc.load(tmp_path / "empty.yaml")
    assert empty.exists is True and empty.as_dict() == {}


def test_save_is_atomic_and_keeps_mode(tmp_path: Path):
    path = tmp_path / "config.yaml"
    doc = ConfigDoc.load(path)
    doc.set("checkpoints.enabled", True)
    doc.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "checkpoints:\n  enabled: true\n"
    path.chmod(0o644)
    doc = ConfigDoc.load(path)
    doc.set("checkpoints.enabled", False)
    doc.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]


# --- the real Hermes ----------------------------------------------------------------------------

MANAGED = {
    "model.provider": "openrouter",
    "model.default": "anthropic/claude-sonnet-4",
    "approvals.mode": "smart",  # equal to the 0.19 default
    "checkpoints.enabled": False,  # equal to the 0.19 default
    "checkpoints.max_snapshots": 5,
    "memory.memory_char_limit": 4000,
    "toolsets": ["hermes-cli", "web"],
    "timezone": "Europe/Berlin",
}


def _write_managed(profile: Path) -> None:
    doc = ConfigDoc.load(profile / "config.yaml")
    for key, value in MANAGED.items():
        doc.set(key, value)
    doc.save(profile / "config.yaml")


@pytest.mark.hermes
def test_hermes_config_set_keeps_our_keys(real_hermes: RealHermes):
    profile = real_hermes.create_profile("cfgbot")
    _write_managed(profile)
    real_hermes.run("config", "set", "some.unmanaged.key", "x", profile="cfgbot")
    doc = ConfigDoc.load(profile / "config.yaml")
    assert doc.get("some.unmanaged.key") == (True, "x")
    for key, value in MANAGED.items():
        assert doc.get(key) == (True, value), key


def effective_value(tree: dict, dotted: str) -> tuple[bool, object]:
    """The live value if present, else Hermes' default if known, else (False, None)."""
    present, value = lookup(tree, dotted)
    return (True, value) if present else default_for(dotted)


@pytest.mark.hermes
def test_hermes_save_config_does_not_change_effective_values(real_hermes: RealHermes):
    profile = real_hermes.create_profile("savebot")
    _write_managed(profile)
    # `plugins enable` goes through save_config(): drops defaults, adds _config_version.
    real_hermes.run("plugins", "enable", "browser-browser-use", profile="savebot")
    doc = ConfigDoc.load(profile / "config.yaml")
    assert doc.get("_config_version") == (True, 33)
    assert doc.get("plugins.enabled")[0]
    for key, value in MANAGED.items():
        assert effective_value(doc.as_dict(), key) == (True, value), key


@pytest.mark.hermes
def test_hermes_reads_our_values(real_hermes: RealHermes):
    profile = real_hermes.create_profile("readbot")
    _write_managed(profile)
    doc = ConfigDoc.load(profile / "config.yaml")
    doc.set("fleet_probe", ["on", "yes", "1e3", "0755", None, True, 1.5])
    doc.save(profile / "config.yaml")
    code = (
        "import json\n"
        "from hermes_cli.config import load_config\n"
        "cfg = load_config()\n"
        "def dig(d, k):\n"
        "    for p in k.split('.'):\n"
        "        d = d[p]\n"
        "    return d\n"
        "keys = json.loads(input())\n"
        "print(json.dumps({k: dig(cfg, k) for k in keys}))\n"
    )
    keys = [*MANAGED, "fleet_probe"]
    seen = json.loads(real_hermes.python(code, profile, stdin=json.dumps(keys)))
    for key in keys:
        assert seen[key] == doc.get(key)[1], key
