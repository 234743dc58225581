"""Fixtures of the runtime suite: the recording model, the outside guard, the real hermes binary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hermes_support import require_hermes
from tests.runtime.model_server import ModelServer
from tests.runtime.outside_guard import OutsideGuard


@pytest.fixture(scope="module")
def hermes_binary() -> Path:
    return require_hermes()


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def guard() -> Iterator[OutsideGuard]:
    proxy = OutsideGuard().start()
    yield proxy
    proxy.stop()
