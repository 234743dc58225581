"""The network bounds at unit level: event ids and the host name, the outbox's record checks, the
stale git locks, and the --git-timeout flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller import cli
from controller.adapters import outbox
from controller.adapters.sources import GIT_LOCKS, remove_stale_locks
from controller.engine import notifying


def test_every_event_has_its_own_id_and_the_given_host() -> None:
    events = notifying.apply_events("acme", "/h", failed=["bot/a: x"], pruned=["bot/b"], host="office")
    assert [e.host for e in events] == ["office", "office"]
    assert len({e.id for e in events}) == 2 and all(outbox.ID_RE.match(e.id) for e in events)
    assert events[0].as_json()["id"] == events[0].id


def test_without_host_the_events_say_the_hostname() -> None:
    import socket

    (found,) = notifying.apply_events("acme", "/h", failed=[], pruned=["bot/b"])
    assert found.host == socket.gethostname()


GOOD = {
    "queued": 1.5,
    "event": {
        "kind": "drift", "severity": "warning", "fleet": "acme", "summary": "s", "at": "", "home": "/h", "host": "x",
        "id": "d" * 32, "details": {"objects": ["bot/a"]},
    },
}  # fmt: skip


def test_an_outbox_record_round_trips_and_wrong_types_are_refused() -> None:
    queued, found = outbox.parse(GOOD)
    assert queued == 1.5 and found is not None and found.details == {"objects": ["bot/a"]}
    for broken in (
        [],
        {"queued": True, "event": GOOD["event"]},
        {"queued": 1, "event": {**GOOD["event"], "kind": 3}},
        {"queued": 1, "event": {**GOOD["event"], "details": []}},
        {"queued": 1},
    ):
        assert outbox.parse(broken) == (0.0, None), broken


def test_stale_git_locks_are_removed_and_nothing_else(tmp_path: Path) -> None:
    git_dir = tmp_path / ".git"
    (git_dir / "refs" / "heads").mkdir(parents=True)
    for name in GIT_LOCKS:
        (git_dir / name).write_bytes(b"")
    (git_dir / "refs" / "heads" / "main.lock").write_bytes(b"")
    (git_dir / "refs" / "heads" / "main").write_text("0" * 40 + "\n")
    (git_dir / "index").write_bytes(b"DIRC")
    removed = remove_stale_locks(git_dir)
    assert sorted(removed) == sorted([*GIT_LOCKS, "refs/heads/main.lock"])
    assert sorted(p.name for p in git_dir.rglob("*")) == ["heads", "index", "main", "refs"]


@pytest.mark.parametrize(("text", "seconds"), [("60s", 60.0), ("2m", 120.0), ("0.5", 0.5)])
def test_git_timeout_is_a_duration(text: str, seconds: float) -> None:
    args = cli.build_parser().parse_args(["watch", "--git", "file:///x", "--git-timeout", text])
    assert args.git_timeout == seconds


def test_git_timeout_defaults_to_a_minute() -> None:
    assert cli.build_parser().parse_args(["watch", "--git", "file:///x"]).git_timeout == 60.0
