"""Whether the Python that runs Hermes can start MCP servers (adapters/hermes_install.mcp_library):
asked of a real interpreter with real files, never of a stub (docs/hermes/no-effect.md#mcp-library).

A "Hermes install" here is a real virtual environment with a `hermes` console script whose `#!`
line names its interpreter, as pip writes one; the `mcp` library is there or not as real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.adapters import hermes_install
from tests.hermes_support import hermes_bin


def fake_install(folder: Path) -> Path:
    """A virtual environment with a `hermes` entry point; returns the script."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    script = folder / "bin" / "hermes"
    script.write_text(f"#!{folder / 'bin' / 'python'}\nimport sys\nsys.exit(0)\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def add_mcp(folder: Path) -> None:
    (site,) = (folder / "lib").glob("python3*/site-packages")
    (site / "mcp").mkdir()
    (site / "mcp" / "__init__.py").write_text("", encoding="utf-8")
    (site / "mcp-1.26.0.dist-info").mkdir()
    (site / "mcp-1.26.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.26.0\n")


def test_an_install_without_mcp_and_the_same_install_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = fake_install(tmp_path / "hermes-venv")
    # a folder named mcp where hermes-fleet runs is not Hermes' library
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    missing = hermes_install.mcp_library(str(script))
    assert missing == hermes_install.McpLibrary(False, str(tmp_path / "hermes-venv" / "bin" / "python"))
    add_mcp(tmp_path / "hermes-venv")
    assert hermes_install.mcp_library(str(script)).available is True


def test_no_install_to_ask_is_unknown_not_false(tmp_path: Path) -> None:
    shell = tmp_path / "hermes"
    shell.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    shell.chmod(0o755)
    got = hermes_install.mcp_library(str(shell))
    assert got.available is None and "not a Python entry point" in got.where


def test_the_hermes_on_path_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = fake_install(tmp_path / "venv")
    add_mcp(tmp_path / "venv")
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}/usr/bin:/bin")
    assert hermes_install.mcp_library().available is True


@pytest.mark.hermes
def test_the_real_hermes_0_19_0_install_has_no_mcp_library() -> None:
    binary = hermes_bin()
    if binary is None:
        pytest.skip("hermes-agent 0.19.0 is not installed")
    got = hermes_install.mcp_library(str(binary))
    assert got.available is False, got  # the stock wheel (and its [messaging] extra) lacks it
