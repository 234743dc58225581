"""A write with `expect` never loses another writer's replace that lands after our comparison.

Hermes' `config set` and `profile describe` replace config.yaml / profile.yaml without a lock
(docs/hermes/files.md). fsio compares the file with what was read, then swaps the new file in with
renameat2(RENAME_EXCHANGE) and checks what came out: a replace that landed between the comparison
and the swap is put back and the write is retried (ChangedUnderUs). The other writer is simulated
exactly there, by replacing the file the moment the comparison has read it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller import bounded
from controller.adapters import fsio
from controller.errors import ChangedUnderUs


def theirs_after_the_comparison(monkeypatch: pytest.MonkeyPatch, target: Path, theirs: bytes) -> None:
    real = bounded.read_or_none
    done: list[bool] = []

    def read(path: Path, limit: int) -> bytes | None:
        data = real(path, limit)
        if Path(path) == target and not done:
            done.append(True)
            side = target.parent / ".theirs.tmp-writer"
            side.write_bytes(theirs)
            os.replace(side, target)  # Hermes' own atomic replace, right after our comparison
        return data

    monkeypatch.setattr(bounded, "read_or_none", read)


def test_a_replace_between_the_comparison_and_ours_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "config.yaml"
    target.write_bytes(b"a: 1\n")
    theirs_after_the_comparison(monkeypatch, target, b"a: 1\next: 7\n")
    with pytest.raises(ChangedUnderUs):
        fsio.atomic_write_bytes(target, b"a: 2\n", expect=b"a: 1\n")
    assert target.read_bytes() == b"a: 1\next: 7\n"  # theirs, not lost under ours
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]  # no temp file left
    fsio.atomic_write_bytes(target, b"a: 2\next: 7\n", expect=b"a: 1\next: 7\n")  # the retry, on theirs
    assert target.read_bytes() == b"a: 2\next: 7\n"


def test_a_file_made_between_the_comparison_and_ours_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "profile.yaml"
    theirs_after_the_comparison(monkeypatch, target, b"description: theirs\n")
    with pytest.raises(ChangedUnderUs):
        fsio.atomic_write_bytes(target, b"description: ours\n", expect=None)
    assert target.read_bytes() == b"description: theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.yaml"]


def test_without_a_race_the_swap_publishes_ours_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    target.write_bytes(b"a: 1\n")
    target.chmod(0o640)
    fsio.atomic_write_bytes(target, b"a: 2\n", expect=b"a: 1\n")
    fsio.atomic_write_bytes(tmp_path / "new.yaml", b"b: 1\n", expect=None)
    assert target.read_bytes() == b"a: 2\n" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "new.yaml"]
