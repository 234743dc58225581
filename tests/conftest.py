"""Shared pytest fixtures: a fresh Hermes root, and the real Hermes CLI bound to it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.hermes_support import HermesCLI, require_hermes

# CI explores the same examples every run (a fuzzer finding must not decide whether a change
# lands); a developer's run keeps exploring new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


@pytest.fixture
def hermes_root(tmp_path: Path) -> Path:
    """An empty Hermes root directory (what HERMES_HOME points at)."""
    root = tmp_path / "hermes"
    root.mkdir()
    return root


@pytest.fixture
def hermes(hermes_root: Path, tmp_path: Path) -> HermesCLI:
    """The real hermes 0.19.0 CLI with HERMES_HOME=hermes_root; skipped (failed on CI) if absent."""
    return HermesCLI(require_hermes(), hermes_root, tmp_path)


@pytest.fixture(params=["cache", "no-cache"])
def observation_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the observation cache on (the default) and off (HERMES_FLEET_NO_CACHE=1,
    as --no-cache for every verb, subprocesses included): the results must agree."""
    from controller.adapters import obscache

    if request.param == "no-cache":
        monkeypatch.setenv(obscache.NO_CACHE_ENV, "1")
    else:
        monkeypatch.delenv(obscache.NO_CACHE_ENV, raising=False)
    return str(request.param)
