"""Fixtures for the converge tests: an isolated user HOME, a Hermes root, a manifest folder."""

from __future__ import annotations

from pathlib import Path

import pytest

SECRET_OR = "sk-or-SECRETVALUE-7f3a9c"
SECRET_PEER = "peer-SECRETVALUE-1b2c3d"
SECRET_FILE = "file-SECRETVALUE-9e8d7c"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hermes root that does not exist yet; HOME points at a scratch user folder."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("OR_KEY", SECRET_OR)
    monkeypatch.setenv("SPARK_KEY", SECRET_PEER)
    return tmp_path / "hermes"


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    folder = tmp_path / "manifests"
    folder.mkdir()
    return folder
