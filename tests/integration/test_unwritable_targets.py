"""`init` and `export` into a folder that cannot be written: a clear error and exit 1, no traceback,
nothing written (both write through adapters.fsio, inside the error mapping).

Tests run as root, so "read-only" is made with `chattr +i` (immutable: even root cannot create a
file in it), as in tests/reliability/test_filesystem_traps.py; skipped where chattr is unavailable.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.helpers import apply, hermes_fleet

MINIMAL = Path(__file__).resolve().parents[2] / "examples" / "minimal"
REFUSED = "Operation not permitted"


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "locked"
    folder.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("this filesystem does not support chattr +i")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-unwritable-test")
    root = tmp_path / "home"
    assert apply(MINIMAL, root).code == 0
    return root


def refused(run: object, message: str) -> None:
    assert run.code == 1, run.text  # type: ignore[attr-defined]
    assert "Traceback" not in run.text  # type: ignore[attr-defined]
    assert f"hermes-fleet: error: {message}: {REFUSED}" in run.err, run.text  # type: ignore[attr-defined]


@pytest.mark.parametrize("sub", ["", "repo"])
def test_init_into_an_unwritable_folder_is_a_clear_error(locked: Path, sub: str) -> None:
    target = locked / sub if sub else locked
    run = hermes_fleet("init", target)
    refused(run, f"cannot create the folder {target / 'fleet'}")
    assert os.listdir(locked) == []


def test_init_json_reports_the_error_as_json(locked: Path) -> None:
    run = hermes_fleet("init", locked, "-o", "json")
    assert run.code == 1 and "Traceback" not in run.text
    assert run.json()["error"]["type"] == "HermesStateError"


def test_export_split_into_an_unwritable_folder_is_a_clear_error(home: Path, locked: Path) -> None:
    refused(hermes_fleet("export", "--home", home, "--no-rooms", "--split", locked), f"cannot write {locked / 'fleet.yaml'}")
    below = locked / "fleet"
    refused(hermes_fleet("export", "--home", home, "--no-rooms", "--split", below), f"cannot create the folder {below}")
    assert os.listdir(locked) == []


def test_export_to_a_file_in_an_unwritable_folder_is_a_clear_error(home: Path, locked: Path) -> None:
    target = locked / "fleet.yaml"
    refused(hermes_fleet("export", "--home", home, "--no-rooms", "-o", target), f"cannot write {target}")
    assert os.listdir(locked) == []
