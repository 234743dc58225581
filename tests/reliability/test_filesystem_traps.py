"""Filesystem traps during the update run (fleet v1 home -> v2): a clear error, nothing outside the home
touched, the owner of a file kept, and the next apply converges once the trap is gone.

Tests run as root, so "read-only" is made with `chattr +i` (immutable: even root cannot replace the
file) and, where chattr is unavailable, skipped; a file sitting where a folder must be is a second,
root-proof form of "cannot write here".
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from controller.adapters import fsio
from tests.integration.helpers import hermes_fleet, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes]


@pytest.fixture
def home(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    return scenario.copy_home(pristine.root, tmp_path / "home")


def apply_v2(pristine: Pristine, home: Path) -> object:
    return hermes_fleet("apply", "-f", pristine.v2, "--home", home, "--prune")


def converges(pristine: Pristine, home: Path) -> None:
    again = apply_v2(pristine, home)
    assert again.code == 0, again.text
    plan = hermes_fleet("plan", "-f", pristine.v2, "--home", home, "--prune", "--detailed-exitcode")
    assert plan.code == 0, plan.text


def test_profile_symlinked_out_of_the_home_is_refused(pristine: Pristine, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "beta"
    shutil.copytree(home / "profiles" / "beta", outside, symlinks=True)
    shutil.rmtree(home / "profiles" / "beta")
    (home / "profiles" / "beta").symlink_to(outside)
    before = snapshot(outside.parent)

    home_before = snapshot(home)
    run = apply_v2(pristine, home)
    assert run.code == 3, run.text
    assert "Traceback" not in run.text
    assert "profiles/beta is a symlink" in run.text, run.text
    assert snapshot(outside.parent) == before, "apply wrote outside the Hermes home"
    # The whole run is refused before its first write (stricter than refusing one bot).
    assert snapshot(home) == home_before


def test_immutable_file_gives_a_clear_error(pristine: Pristine, home: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    soul = home / "profiles" / "alpha" / "SOUL.md"
    if subprocess.run(["chattr", "+i", str(soul)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem does not support chattr +i")
    try:
        old = soul.read_bytes()
        run = apply_v2(pristine, home)
        assert run.code == 1, run.text
        assert "Traceback" not in run.text
        assert "bot/alpha" in run.text and "Operation not permitted" in run.text, run.text
        assert soul.read_bytes() == old
        assert scenario.leftovers(home) == []
        assert scenario.ui_meta(home, "legacy")["hermes-bots"]["title"] == "Legacy Bot"  # others went on
    finally:
        subprocess.run(["chattr", "-i", str(soul)], check=True)
    converges(pristine, home)


def test_file_where_a_folder_must_be(pristine: Pristine, home: Path) -> None:
    assets = home / "profiles" / "alpha" / "assets"
    shutil.rmtree(assets)
    assets.write_text("not a folder\n", encoding="utf-8")
    run = apply_v2(pristine, home)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert "bot/alpha" in run.text and "assets" in run.text, run.text
    assert assets.read_text(encoding="utf-8") == "not a folder\n"
    assets.unlink()
    converges(pristine, home)


@pytest.mark.parametrize("at", [1, 4, 11, -1], ids=["root-config", "profile-yaml", "new-profile", "inventory"])
def test_full_disk(pristine: Pristine, home: Path, at: int) -> None:
    """ENOSPC at a write point (the last one: the inventory): exit 1, the message, no debris; then converge."""
    count = scenario.run_cli(
        ["apply", "-f", pristine.v2, "--home", scenario.copy_home(home, home.parent / "count"), "--prune"],
        pristine.env,
        hook="count",
        log=home.parent / "count.log",
    )
    assert count.returncode == 0
    n = len((home.parent / "count.log").read_text().splitlines())
    k = n if at == -1 else at
    calls = [0]

    def full(target: Path) -> None:
        calls[0] += 1
        if calls[0] == k:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    fsio.WRITE_HOOKS.append(full)
    try:
        run = apply_v2(pristine, home)
    finally:
        fsio.WRITE_HOOKS.remove(full)
    assert run.code == 1, run.text
    assert "Traceback" not in run.text
    assert "No space left on device" in run.text, run.text
    assert scenario.leftovers(home) == []
    converges(pristine, home)


def test_owner_and_mode_are_kept_on_rewrite(pristine: Pristine, home: Path) -> None:
    config = home / "profiles" / "beta" / "config.yaml"
    env = home / "profiles" / "alpha" / ".env"
    os.chown(config, 4242, 4343)
    os.chmod(config, 0o640)
    os.chown(env, 4242, 4343)
    run = apply_v2(pristine, home)
    assert run.code == 0, run.text
    assert "openai/gpt-5" in config.read_text(encoding="utf-8")  # really rewritten
    st = config.stat()
    assert (st.st_uid, st.st_gid, scenario.mode(config)) == (4242, 4343, 0o640)
    st = env.stat()
    assert (st.st_uid, st.st_gid, scenario.mode(env)) == (4242, 4343, 0o600)
    assert "PLAIN_SETTING=v2" in env.read_text(encoding="utf-8")
