"""Each reconciler log line carries its level, in every format, and journald reads it (docs/watch.md#logs)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.engine.loglevels import Level, journald_reads, level_of
from controller.engine.watching import Log
from tests.watch.harness import REPO, environ, parse_text, write_fleet


@pytest.mark.parametrize(
    ("event", "fields", "level"),
    [
        ("reconciled", {"result": "applied"}, Level.INFO),
        ("reconciled", {"result": "in-sync"}, Level.INFO),
        ("reconciled", {"result": "drift"}, Level.WARNING),
        ("reconciled", {"result": "busy"}, Level.WARNING),
        ("reconciled", {"result": "interrupted"}, Level.WARNING),
        ("reconciled", {"result": "partial"}, Level.ERROR),
        ("reconciled", {"result": "stalled"}, Level.ERROR),
        ("reconciled", {"result": "conflict"}, Level.ERROR),
        ("reconciled", {"result": "source-error"}, Level.ERROR),
        ("drift_detected", {"objects": ["bot/a"]}, Level.WARNING),
        ("notify_retry", {}, Level.WARNING),
        ("notify_dropped", {}, Level.WARNING),
        ("internal_error", {}, Level.ERROR),
        ("status_not_written", {}, Level.ERROR),
        ("notify_failed", {}, Level.ERROR),
        ("started", {}, Level.INFO),
        ("apply_progress", {}, Level.INFO),
        ("stopped", {}, Level.INFO),
    ],
)
def test_level_of_each_event(event: str, fields: dict[str, object], level: Level) -> None:
    assert level_of(event, fields) is level


def _lines(fmt: str) -> list[str]:
    out = io.StringIO()
    log = Log(fmt, out)
    log.event("started", home="/h", mode="report")
    log.event("drift_detected", objects=["bot/a"], hint="apply, or run watch with --self-heal")
    log.event("reconciled", trigger="once", result="partial", message="1 failed\nsee above")
    return out.getvalue().splitlines()


def test_text_lines_end_with_their_level() -> None:
    events = [parse_text(line) for line in _lines("text")]
    assert [(e["event"], e["level"]) for e in events] == [
        ("started", "info"),
        ("drift_detected", "warning"),
        ("reconciled", "error"),
    ]
    assert events[2]["message"] == "1 failed\nsee above"  # one line per event, even for a multi-line value


def test_json_lines_carry_their_level_after_time_and_event() -> None:
    objects = [json.loads(line) for line in _lines("json")]
    assert [list(o)[:3] for o in objects] == [["time", "event", "level"]] * 3
    assert [o["level"] for o in objects] == ["info", "warning", "error"]


def test_journal_format_prefixes_the_syslog_priority() -> None:
    assert _lines("journal") == [
        "<6>started home=/h mode=report",
        '<4>drift_detected objects=bot/a hint="apply, or run watch with --self-heal"',
        '<3>reconciled trigger=once result=partial message="1 failed\\nsee above"',
    ]


def test_a_stream_journald_reads_gets_the_prefix_in_any_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(tmp_path / "journal", "w") as journal, open(tmp_path / "other", "w") as other:
        info = os.fstat(journal.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{info.st_dev}:{info.st_ino}")
        assert journald_reads(journal) and not journald_reads(other) and not journald_reads(io.StringIO())
        Log("json", journal).event("reconciled", result="stalled")
        Log("json", other).event("reconciled", result="stalled")
    line = (tmp_path / "journal").read_text()
    assert line.startswith("<3>{") and json.loads(line[3:])["level"] == "error"
    assert (tmp_path / "other").read_text().startswith("{")
    monkeypatch.delenv("JOURNAL_STREAM")
    with open(tmp_path / "journal", "a") as journal:
        assert not journald_reads(journal)


def test_watch_under_journald_writes_a_priority_on_every_line(user: Path, manifests: Path, home: Path, tmp_path: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])

    def once(*args: str | Path) -> list[str]:
        path = tmp_path / "stdout"
        with open(path, "w") as stdout:  # what systemd hands a unit with StandardOutput=journal
            info = os.fstat(stdout.fileno())
            argv = [sys.executable, "-m", "controller", "watch", "--once", "--home", str(home), "--log-format", "json"]
            env = environ(user, JOURNAL_STREAM=f"{info.st_dev}:{info.st_ino}")
            subprocess.run([*argv, *map(str, args)], cwd=REPO, env=env, stdout=stdout, timeout=60, check=False)
        return path.read_text().splitlines()

    lines = once("-f", fleet)
    assert len(lines) == 1 and lines[0].startswith("<6>"), lines  # --once logs its one pass
    assert json.loads(lines[0][3:])["result"] == "applied"
    failed = once("--git", (tmp_path / "no-such-repo.git").as_uri())
    run = next(line for line in failed if '"reconciled"' in line)
    assert run.startswith("<3>") and json.loads(run[3:])["result"] == "source-error"
