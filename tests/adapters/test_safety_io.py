"""The adapters' safety floor, on real files: bounded reads, one OSError mapping with a fix in it,
containment checks, the sweep of a dead run's leftovers, and exact floats in config.yaml."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller import bounded
from controller.adapters import fsio, home, locking, profiles
from controller.adapters.configfile import ConfigDoc
from controller.errors import ConflictError, ContainmentError, HermesStateError, NotRegular, SecretUnavailable, TooLarge
from controller.manifests import references
from controller.manifests.desired import EnvEntry
from controller.manifests.models import SecretRef

# --- bounded reads --------------------------------------------------------------------------------


def test_bounded_read_refuses_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with big.open("wb") as handle:
        handle.truncate(10_000_000)  # sparse: refusing it must not read it
    with pytest.raises(TooLarge) as caught:
        bounded.read_bytes(big, 1000)
    assert (caught.value.size, caught.value.limit, caught.value.errno) == (10_000_000, 1000, errno.EFBIG)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="FIFO"):
        bounded.read_bytes(fifo, 1000)  # a plain open() would block here forever
    with pytest.raises(NotRegular, match="character device"):
        bounded.read_bytes("/dev/zero", 1000)
    with pytest.raises(NotRegular, match="folder"):
        bounded.read_bytes(tmp_path, 1000)
    assert bounded.read_or_none(tmp_path / "missing", 10) is None
    (tmp_path / "ok").write_bytes(b"12345")
    assert bounded.read_bytes(tmp_path / "ok", 5) == b"12345"


def test_a_home_file_that_is_a_fifo_is_a_clean_state_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.yaml")
    with pytest.raises(HermesStateError) as caught:
        ConfigDoc.load(tmp_path / "config.yaml")
    assert "not a regular file" in str(caught.value) and "replace it with a regular file" in str(caught.value)


# --- one mapping of OSError, with the fix --------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.EPERM, "immutable"),
        (errno.EISDIR, "a folder is where a file must be"),
        (errno.ENOTDIR, "a file is where a folder must be"),
        (errno.ENOSPC, "the disk is full"),
        (errno.EDQUOT, "quota"),
        (errno.EIO, "I/O error"),
    ],
)
def test_state_error_names_the_path_the_reason_and_the_fix(code: int, fragment: str) -> None:
    error = fsio.state_error(OSError(code, os.strerror(code)), "write", Path("/h/profiles/a/.env"))
    assert isinstance(error, HermesStateError) and error.exit_code == 1
    assert str(error).startswith(f"cannot write /h/profiles/a/.env: {os.strerror(code)}; ")
    assert fragment in str(error) and error.path == "/h/profiles/a/.env"


def test_a_write_onto_a_folder_is_mapped_and_leaves_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").mkdir()
    with pytest.raises(HermesStateError, match="a folder is where a file must be"):
        fsio.atomic_write_text(tmp_path / "SOUL.md", "x")
    assert sorted(os.listdir(tmp_path)) == ["SOUL.md"]


def test_a_lock_file_that_is_a_folder_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / ".hermes-fleet" / "apply.lock").mkdir(parents=True)
    with (
        pytest.raises(HermesStateError, match=r"cannot open the lock file .*: Is a directory"),
        locking.apply_lock(tmp_path, timeout=0),
    ):
        pass


def test_publish_dir_onto_an_existing_folder_is_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "staging").mkdir()
    (tmp_path / "final").mkdir()
    with pytest.raises(ConflictError, match="appeared while hermes-fleet was creating it"):
        fsio.publish_dir(tmp_path / "staging", tmp_path / "final")


# --- containment ----------------------------------------------------------------------------------


def test_check_profile_follows_links_only_inside_the_profile(tmp_path: Path) -> None:
    root = tmp_path / "home"
    alpha = root / "profiles" / "alpha"
    (alpha / "cron").mkdir(parents=True)
    (root / "profiles" / "legacy").mkdir()
    (alpha / "real.env").write_text("")
    (alpha / ".env").symlink_to("real.env")
    assert home.check_profile(root, "alpha") == alpha  # inside: followed
    (alpha / "cron" / "jobs.json").symlink_to(root / "profiles" / "legacy" / "jobs.json")
    with pytest.raises(
        ContainmentError, match=r"cron/jobs\.json leads to .*legacy/jobs\.json, which is not part of profile 'alpha'"
    ):
        home.check_profile(root, "alpha")
    (root / "config.yaml").symlink_to(root / ".hermes-fleet" / "x")
    with pytest.raises(ContainmentError, match="not part of profile 'default'"):
        home.check_profile(root, "default")  # the root profile owns the home minus profiles/ and .hermes-fleet/


def test_state_paths_may_not_pass_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".hermes-fleet").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ContainmentError, match=r"\.hermes-fleet is a symlink"):
        home.check_state_path(tmp_path / "home", tmp_path / "home" / ".hermes-fleet" / "inventory" / "acme.json")
    with pytest.raises(ContainmentError), locking.apply_lock(tmp_path / "home", timeout=0):
        pass
    assert os.listdir(tmp_path / "elsewhere") == []


# --- leftovers of a dead run ---------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # reaped: no process has this id now (pids are not reused this fast)


def test_sweep_removes_only_a_dead_runs_own_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "home"
    alpha = root / "profiles" / "alpha"
    alpha.mkdir(parents=True)
    dead, alive = _dead_pid(), os.getppid()
    ours_dead = alpha / f"..env.hf{dead}.k2x9ab.tmp"
    ours_alive = alpha / f"..env.hf{alive}.k2x9ab.tmp"  # a live writer's: kept
    hermes_tmp = alpha / ".config_abc123.tmp"  # Hermes' own temp name: never ours
    staging = root / "profiles" / f".gamma.staging-{dead}"
    for path in (ours_dead, ours_alive, hermes_tmp):
        path.write_text("x")
    (staging / "cron").mkdir(parents=True)
    removed = profiles.sweep_leftovers(root, {"alpha"})
    assert sorted(removed) == sorted([ours_dead, staging])
    assert ours_alive.exists() and hermes_tmp.exists() and not ours_dead.exists() and not staging.exists()


# --- from_file ------------------------------------------------------------------------------------


def test_a_relative_from_file_may_not_leave_its_folder_even_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s3cret\n")
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "link").symlink_to(tmp_path / "secret")
    entry = EnvEntry(ref=SecretRef(from_file="link"), base_dir=str(manifests))
    with pytest.raises(SecretUnavailable, match="leads out of the manifest's folder"):
        references.resolve(entry)
    absolute = EnvEntry(ref=SecretRef(from_file=str(tmp_path / "secret")), base_dir=str(manifests))
    assert references.resolve(absolute) == "s3cret"  # an absolute path is read where it is
    device = EnvEntry(ref=SecretRef(from_file="/dev/zero"), base_dir=str(manifests))
    with pytest.raises(SecretUnavailable, match="not a regular file"):
        references.resolve(device)


# --- exact floats ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["4.531285637299909e+160", "1.50", "0.1", "-0.0", "1.7976931348623157e+308", "3."])
def test_a_float_nobody_touched_keeps_its_value(text: str) -> None:
    """ruamel rebuilt `4.531285637299909e+160` as `...908e+160` when another key changed."""
    doc = ConfigDoc.parse(f"kept: {text}\n")
    doc.set("other", 1)
    again = ConfigDoc.parse(doc.render())
    assert again.get("kept") == (True, float(text))


@pytest.mark.parametrize("value", [1e16, 5e-324, 4.531285637299909e160, 1e300, -2.5e-10])
def test_a_float_we_write_reads_back_as_the_same_float_under_pyyaml_rules(value: float) -> None:
    doc = ConfigDoc.parse("")
    doc.set("x", value)
    text = doc.render()
    assert "!!float" not in text
    assert ConfigDoc.parse(text).get("x") == (True, value)
