"""Fixtures of the runtime suite: the recording model, the outside guard, the real hermes binary."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hermes_support import INSTALL_HINT, hermes_bin
from tests.runtime.model_server import ModelServer
from tests.runtime.outside_guard import OutsideGuard


@pytest.fixture(scope="module")
def hermes_binary() -> Path:
    binary = hermes_bin()
    if binary is None:
        message = f"hermes-agent 0.19.0 is not installed: {INSTALL_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


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
