"""Writes inside a staging folder (`fsio.deferred()`): a new file is created in place.

A new profile is built in a folder nobody can see, synced whole and published with one rename
(docs/reliability.md#new-profiles), so its files need no temp file and rename of their own. Files
with run-specific bytes (`via_temp=True`: profile.yaml's new record, a cron store's fresh ids) keep
the temp file, so the crash tests can log their complete bytes before they get their name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from controller.adapters import fsio


@pytest.fixture
def hooked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(fsio, "WRITE_HOOKS", [lambda path: seen.append(Path(path).name)])
    return seen


def test_a_new_file_in_staging_is_created_in_place_with_its_mode(tmp_path: Path, hooked: list[str]) -> None:
    old_umask = os.umask(0o077)
    try:
        with fsio.deferred():
            fsio.atomic_write_text(tmp_path / ".env", "A=1\n", mode=0o600)
            fsio.atomic_write_bytes(tmp_path / "SOUL.md", (b"x" * 10 for _ in range(3)), mode=0o644)
    finally:
        os.umask(old_umask)
    assert hooked == []  # no rename: nothing was published file by file
    assert (tmp_path / ".env").read_text() == "A=1\n" and (tmp_path / "SOUL.md").read_bytes() == b"x" * 30
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "SOUL.md").stat().st_mode) == 0o644  # not narrowed by the umask
    assert sorted(os.listdir(tmp_path)) == [".env", "SOUL.md"]  # no temp file


def test_run_specific_files_and_existing_files_keep_the_temp_file(tmp_path: Path, hooked: list[str]) -> None:
    (tmp_path / "config.yaml").write_text("old: 1\n")
    with fsio.deferred():
        fsio.atomic_write_text(tmp_path / "profile.yaml", "created: 1\n", via_temp=True)
        fsio.atomic_write_text(tmp_path / "config.yaml", "new: 1\n")
    assert hooked == ["profile.yaml", "config.yaml"]
    assert (tmp_path / "config.yaml").read_text() == "new: 1\n"


def test_outside_staging_a_new_file_still_goes_through_a_temp_file(tmp_path: Path, hooked: list[str]) -> None:
    fsio.atomic_write_text(tmp_path / "config.yaml", "a: 1\n")
    assert hooked == ["config.yaml"]


def test_a_link_in_staging_is_never_opened_in_place(tmp_path: Path, hooked: list[str]) -> None:
    outside = tmp_path / "outside"
    outside.write_text("theirs\n")
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "SOUL.md").symlink_to(outside)
    with fsio.deferred():
        fsio.atomic_write_text(tmp_path / "staging" / "SOUL.md", "ours\n")
    # The in-place create refuses to follow it (O_EXCL | O_NOFOLLOW); the temp-file path writes
    # through the link as everywhere else (callers check containment first).
    assert hooked == ["outside"]
    assert outside.read_text() == "ours\n"


def test_an_expected_file_that_is_gone_is_a_change_under_us(tmp_path: Path) -> None:
    with fsio.deferred(), pytest.raises(fsio.ChangedUnderUs):
        fsio.atomic_write_text(tmp_path / "config.yaml", "a: 1\n", expect=b"a: 0\n")
    assert not (tmp_path / "config.yaml").exists()
