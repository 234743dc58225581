"""Fixtures for the reconciler tests: a scratch user HOME, a manifest folder, a home, and watchers
that are always stopped and reaped at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.watch.harness import Watch


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))  # in-process CLI calls see the same user as the watchers
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    return folder


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    folder = tmp_path / "manifests"
    folder.mkdir()
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hermes"


@pytest.fixture
def spawn(user: Path) -> Iterator[Callable[..., Watch]]:
    """`spawn(*watch_args)` starts `hermes-fleet watch`; every one is reaped at teardown."""
    started: list[Watch] = []

    def start(*args: str | Path, log_format: str = "json", **env: str) -> Watch:
        watch = Watch(user, *args, log_format=log_format, **env)
        started.append(watch)
        return watch

    yield start
    for watch in started:
        watch.close()
