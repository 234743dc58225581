"""Fixtures for the reliability suite: the pristine home (built once per module with the real Hermes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hermes_support import require_hermes
from tests.reliability import scenario


@dataclass
class Pristine:
    root: Path  # the home after fleet v1 (never modified: copy it)
    base_root: Path  # the home before fleet v1: only what real Hermes made
    env: dict[str, str]
    v1: Path
    v2: Path
    user: Path
    v3: Path  # v1 with alpha renamed to scout


def need_hermes() -> None:
    require_hermes()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    need_hermes()
    base = tmp_path_factory.mktemp("pristine")
    cli = scenario.hermes_cli(base / "hermes-only", base / "hermes-scratch")
    assert cli is not None
    cli.root.mkdir()
    scenario.make_legacy(cli)
    root = scenario.copy_home(cli.root, base / "v1-home")
    user = base / "user"
    user.mkdir()
    env = scenario.environ(user)
    v1 = scenario.manifests(base / "v1", 1)
    v2 = scenario.manifests(base / "v2", 2)
    v3 = scenario.manifests(base / "v3", 3)
    first = scenario.run_cli(["apply", "-f", v1, "--home", root, "--adopt"], env)
    assert first.returncode == 0, first.stdout + first.stderr
    scenario.add_rename_traces(root)
    return Pristine(root=root, base_root=cli.root, env=env, v1=v1, v2=v2, user=user, v3=v3)
