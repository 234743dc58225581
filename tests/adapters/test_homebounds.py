"""The bounds on home files (controller/adapters/homebounds.py): what is refused, where, and that
what Hermes itself writes (aliases included) still reads."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from controller.adapters import configfile, cronstore, homebounds
from controller.errors import HermesStateError
from tests.hermes_support import hermes_bin

BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def refused(text: str) -> str:
    with pytest.raises(HermesStateError) as caught:
        configfile.ConfigDoc.parse(text, source="/h/profiles/bot/config.yaml")
    return str(caught.value)


def test_an_alias_bomb_is_refused_at_once_with_its_position() -> None:
    started = time.monotonic()
    message = refused(BOMB)
    assert time.monotonic() - started < 1
    assert message.startswith("/h/profiles/bot/config.yaml:") and "more than 100,000 values" in message and "alias" in message


def test_aliases_within_the_bound_are_read_expanded() -> None:
    doc = configfile.ConfigDoc.parse("base: &b [1, 2]\nother: *b\nmore: {<<: {k: v}}\n", source="c.yaml")
    assert doc.as_dict()["other"] == [1, 2]


def test_nesting_is_bounded_directly_and_through_an_alias() -> None:
    assert "deeper than 64 levels" in refused("x: " + "[" * 30_000 + "]" * 30_000 + "\n")
    nested = "[" * 40 + "1" + "]" * 40
    assert "through the alias *n" in refused(f"a: &n {nested}\nb: {'[' * 30}*n{']' * 30}\n")
    configfile.ConfigDoc.parse(f"a: {'[' * 63}1{']' * 63}\n", source="c.yaml")  # 64 levels: the bound itself


@pytest.mark.parametrize("number", ["9" * 5000, "-" + "1" * 101, "1" * 101 + ".5", "1_000" * 30])
def test_long_numbers_are_refused_before_python_converts_them(number: str) -> None:
    assert "digits" in refused(f"n: {number}\n")


@pytest.mark.parametrize(
    "value", ["'" + "9" * 5000 + "'", "0x" + "f" * 500, "sha" + "9" * 500, "9" * 100, "1" * 60 + "." + "2" * 60]
)
def test_text_hex_and_numbers_of_up_to_100_digits_read(value: str) -> None:
    text = f"v: {value}\n"
    assert configfile.ConfigDoc.parse(text, source="c.yaml").as_dict() == yaml.safe_load(text)  # Hermes reads with PyYAML


def test_a_config_larger_than_its_bound_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    with path.open("w") as handle:
        handle.truncate(homebounds.CONFIG_BYTES + 1)
    with pytest.raises(HermesStateError, match="over the 1,048,576-byte limit"):
        configfile.ConfigDoc.load(path)


def test_json_numbers_and_depth_are_bounded(tmp_path: Path) -> None:
    (tmp_path / "cron").mkdir()
    store = tmp_path / "cron" / "jobs.json"
    store.write_text('{"jobs": [], "n": ' + "9" * 5000 + "}")
    with pytest.raises(HermesStateError, match="5,000 digits"):
        cronstore.read_jobs(tmp_path)
    store.write_text('{"jobs": [' + "[" * 30_000 + "]" * 30_000 + "]}")
    with pytest.raises(HermesStateError, match="deeper than 64 levels"):
        cronstore.read_jobs(tmp_path)
    store.write_text('{"jobs": [' + "[" * 70 + "]" * 70 + "]}")  # within the parser's recursion, past ours
    with pytest.raises(HermesStateError, match="deeper than 64 levels"):
        cronstore.read_jobs(tmp_path)


def test_a_config_hermes_writes_with_aliases_reads(tmp_path: Path) -> None:
    """Hermes' IndentDumper (utils.py, 0.19.0) writes a value that appears twice as &anchor/*alias."""
    binary = hermes_bin()
    if binary is None:
        pytest.skip("hermes-agent 0.19.0 is not installed")
    python = Path(binary).parent / "python"
    script = (
        "import sys; from pathlib import Path; from utils import atomic_yaml_write\n"
        "shared = ['web', 'terminal']\n"
        "atomic_yaml_write(Path(sys.argv[1]), {'toolsets': shared, 'platform_toolsets': {'cli': shared}})\n"
    )
    subprocess.run([str(python), "-c", script, str(tmp_path / "config.yaml")], check=True, env={"HERMES_HOME": str(tmp_path)})
    text = (tmp_path / "config.yaml").read_text()
    assert "&" in text and "*" in text
    doc = configfile.ConfigDoc.load(tmp_path / "config.yaml")
    assert doc.as_dict()["platform_toolsets"]["cli"] == ["web", "terminal"]
