"""What keeps a large apply linear and visible: one inventory write-ahead per run, grouped folder
fsyncs, the progress line on a terminal and the reconciler's progress events.

Real files in temporary homes, the CLI in-process; fsync and the inventory writer are counted by
wrapping the real functions (they still run).
"""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import fsio
from controller.adapters import inventory as inventory_file
from controller.engine.watching import Log, ProgressLog
from controller.errors import HermesStateError
from controller.verbs import progress as progress_mod
from controller.verbs.progress import ProgressLine
from tests.integration.helpers import apply, assert_converged, changes, fields, plan, write_fleet


def fleet_with_routines(manifests: Path, bots: int, routines: int) -> Path:
    return write_fleet(
        manifests,
        [
            {
                "name": f"bot{i}",
                "title": f"Bot {i}",
                "toolsets": ["web"],
                "config": {"agent.max_turns": 20 + i},
                "routines": [{"name": f"r{r}", "schedule": "every 2h", "prompt": f"do {r}"} for r in range(routines)],
            }
            for i in range(bots)
        ],
    )


def test_apply_writes_the_inventory_twice_whatever_the_number_of_bots(
    home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write-ahead of every new job id, then the run's record: not one full write per bot."""
    writes: list[int] = []
    real = inventory_file.write

    def counting(root: Path, fleet: str, data: dict[str, Any]) -> None:
        writes.append(len(data["objects"]))
        real(root, fleet, data)

    monkeypatch.setattr(inventory_file, "write", counting)
    manifest = fleet_with_routines(manifests, bots=6, routines=2)
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert len(writes) == 2, writes
    # The write-ahead already holds every new routine (6 x 2) with its job id, before any cron store.
    inventory = json.loads(inventory_file.inventory_path(home, "acme").read_text())
    for i in range(6):
        jobs = json.loads((home / "profiles" / f"bot{i}" / "cron" / "jobs.json").read_text())["jobs"]
        assert sorted(j["id"] for j in jobs) == sorted(inventory["objects"][f"routine/bot{i}/r{r}"]["job_id"] for r in range(2))
    assert plan(manifest, home, "--detailed-exitcode").code == 0


def test_a_refused_routine_gets_no_write_ahead_record(home: Path, manifests: Path) -> None:
    bots = [
        {"name": "good", "routines": [{"name": "r", "schedule": "every 2h", "prompt": "p"}]},
        {"name": "bad", "routines": [{"name": "r", "schedule": "every 2h", "prompt": "p", "workdir": "/no/such/dir"}]},
    ]
    run = apply(write_fleet(manifests, bots), home)
    assert run.code == 1, run.text
    objects = json.loads(inventory_file.inventory_path(home, "acme").read_text())["objects"]
    assert "routine/good/r" in objects
    assert "routine/bad/r" not in objects


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_grouped_syncs_each_file_and_each_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_fsyncs(monkeypatch)
    for i in range(4):
        fsio.atomic_write_text(tmp_path / f"f{i}", "x")
    assert calls.count("file") == 4 and calls.count("dir") == 4
    calls.clear()
    (tmp_path / "sub").mkdir()
    with fsio.grouped():
        for i in range(4):
            fsio.atomic_write_text(tmp_path / f"g{i}", "x")
            fsio.atomic_write_text(tmp_path / "sub" / f"g{i}", "x")
        assert calls.count("dir") == 0  # deferred to the end of the block
    assert calls.count("file") == 8 and calls.count("dir") == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("g")) == ["g0", "g1", "g2", "g3"]


def test_grouped_syncs_a_renamed_folder_once_and_still_syncs_on_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_fsyncs(monkeypatch)
    staging, final = tmp_path / ".b.staging", tmp_path / "b"
    staging.mkdir()
    with pytest.raises(RuntimeError), fsio.grouped():
        fsio.atomic_write_text(staging / "a", "x")
        fsio.publish_dir(staging, final)
        fsio.atomic_write_text(final / "c", "y")  # the same folder as `staging`, by inode
        raise RuntimeError("boom")
    assert calls.count("file") == 2 and calls.count("dir") == 2  # b (= staging) and tmp_path
    assert (final / "a").read_text() == "x" and (final / "c").read_text() == "y"


def test_a_new_profile_is_synced_once_as_a_whole_before_its_rename(
    home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = fleet_with_routines(manifests, bots=3, routines=1)
    synced: list[str] = []
    real_fsync, real_syncfs = os.fsync, fsio._syncfs

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def syncfs(fd: int) -> bool:
        synced.append("syncfs " + os.readlink(f"/proc/self/fd/{fd}"))
        return real_syncfs(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(fsio, "_syncfs", syncfs)
    assert apply(manifest, home).code == 0
    whole = [s for s in synced if s.startswith("syncfs ")]
    # One syncfs per new profile, on its staging folder, and no fsync of any file inside one.
    assert len(whole) == 3 and all(".staging-" in s for s in whole), synced
    assert not [s for s in synced if ".staging-" in s and not s.startswith("syncfs ")], synced
    # Per bot: the syncfs, profiles/ after the rename, its cron store and cron/ (routines); then
    # the run's own state (inventory twice, parse cache, history) with their folders.
    assert len(synced) <= 3 * 4 + 8, synced


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_absent_profiles_are_known_from_one_listing(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.adapters import home as home_adapter
    from controller.engine import observing, records
    from controller.manifests import reading

    assert apply(fleet_with_routines(manifests, bots=2, routines=1), home).code == 0  # bot0, bot1 exist
    manifest = fleet_with_routines(manifests, bots=4, routines=1)
    (home / "profiles" / ".deleted" / "bot3").mkdir(parents=True)  # Hermes main deleted bot3
    checked: list[str] = []
    real = home_adapter.check_profile

    def check(root: Path, name: str, *args: Any) -> Path:
        checked.append(name)
        return real(root, name, *args)

    monkeypatch.setattr(home_adapter, "check_profile", check)
    loaded = reading.load_paths([str(manifest)], recursive=True, fleet=None)
    assert loaded.state is not None
    observed = observing.observe(home, loaded.state, records.load(home, "acme"))
    assert sorted(set(checked)) == ["bot0", "bot1", "default"]  # bot2 and bot3 are not there: no look each
    live = observed.live
    assert live["bot0"].exists and not live["bot2"].exists and not live["bot2"].tombstoned
    assert not live["bot3"].exists and live["bot3"].tombstoned
    assert live["bot2"].path == home / "profiles" / "bot2"


def test_progress_line_on_a_terminal_after_two_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod.shutil, "get_terminal_size", lambda fallback: os.terminal_size((40, 24)))
    clock, out = Clock(), Terminal()
    line = ProgressLine(out, clock=clock)
    line(0, 1000, "bot/bot0")
    clock.now += 1.9
    line(10, 1000, "bot/bot10")
    assert out.getvalue() == ""  # a run shorter than ~2 s prints nothing extra
    clock.now += 0.2
    line(12, 1000, "bot/bot12")
    assert out.getvalue() == "\rapplying 12/1000 bot/bot12\033[K"
    clock.now += 0.05
    line(13, 1000, "bot/bot13")  # throttled: at most one redraw per 0.1 s
    clock.now += 0.1
    line(14, 1000, "routine/a-very-long-bot-name-indeed/*")
    assert out.getvalue().endswith("\rapplying 14/1000 routine/a-very-long-bo\033[K")  # cut to 39
    line.close()
    assert out.getvalue().endswith("\r\033[K")


def test_progress_line_is_silent_in_a_pipe_and_with_json() -> None:
    clock, pipe = Clock(), io.StringIO()
    line = ProgressLine(pipe, clock=clock)
    clock.now += 10
    line(1, 2, "bot/a")
    line.close()
    assert pipe.getvalue() == ""
    tty = Terminal()
    off = ProgressLine(tty, enabled=False, clock=clock)
    clock.now += 10
    off(1, 2, "bot/a")
    assert tty.getvalue() == ""


def test_apply_in_a_pipe_and_with_json_prints_no_progress(home: Path, manifests: Path) -> None:
    manifest = fleet_with_routines(manifests, bots=2, routines=1)
    run = apply(manifest, home, "-o", "json")
    assert run.code == 0 and "applying" not in run.err and "\r" not in run.text
    json.loads(run.out)


def test_reconciler_logs_progress_every_two_seconds() -> None:
    clock, out = Clock(), io.StringIO()
    log = ProgressLog(Log("json", out), clock=clock)
    log(0, 300, "bot/a")
    clock.now += 1.0
    log(5, 300, "bot/f")
    assert out.getvalue() == ""
    clock.now += 1.5
    log(7, 300, "bot/h")
    clock.now += 0.5
    log(8, 300, "bot/i")
    clock.now += 2.0
    log(20, 300, "routine/t/*")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["event"], e["done"], e["total"], e["object"]) for e in lines] == [
        ("apply_progress", 7, 300, "bot/h"),
        ("apply_progress", 20, 300, "routine/t/*"),
    ]


# --- the parse cache (adapters/parsecache.py) -----------------------------------------------------


@pytest.fixture
def fresh_parser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A parser memo as in a new process, and a list of the texts really parsed. The observation
    cache is off: these tests are about the parse cache, which every full read goes through (with
    the observation cache on, an unchanged file is not even read)."""
    from controller.adapters import configfile, obscache, parsecache

    monkeypatch.setenv(obscache.NO_CACHE_ENV, "1")

    monkeypatch.setattr(configfile, "_MEMO", {})
    monkeypatch.setattr(configfile, "_LAST", {})
    monkeypatch.setattr(parsecache, "_LOADED", set())
    parsed: list[str] = []
    real = configfile._parse_plain

    def counting(text: str) -> dict[str, Any] | None:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(configfile, "_parse_plain", counting)
    return parsed


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.adapters import configfile, parsecache

    monkeypatch.setattr(configfile, "_MEMO", {})
    monkeypatch.setattr(parsecache, "_LOADED", set())


def test_a_plan_after_apply_parses_no_yaml_file(
    home: Path, manifests: Path, fresh_parser: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller.adapters import parsecache

    manifest = fleet_with_routines(manifests, bots=4, routines=1)
    assert apply(manifest, home).code == 0
    cache = parsecache.cache_path(home)
    assert cache.is_file() and (cache.stat().st_mode & 0o777) == 0o600
    documents = json.loads(cache.read_text())["documents"]
    assert len(documents) >= 8  # each bot's config.yaml and profile.yaml, as the apply left them
    new_process(monkeypatch)
    fresh_parser.clear()
    assert plan(manifest, home, "--detailed-exitcode").code == 0
    assert fresh_parser == []


def test_an_edit_of_the_same_size_in_the_same_second_is_seen(
    home: Path, manifests: Path, fresh_parser: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache is keyed by the text's digest, so no stat field can hide an edit: here the inode,
    size and mtime are kept (ctime cannot be set back; a coarse clock can repeat it)."""
    manifest = write_fleet(manifests, [{"name": "a", "title": "Alpha", "config": {"agent.max_turns": 21}}])
    assert apply(manifest, home).code == 0
    config = home / "profiles" / "a" / "config.yaml"
    before = config.stat()
    text = config.read_text()
    assert "max_turns: 21" in text
    with open(config, "r+", encoding="utf-8") as handle:  # in place: the same inode
        handle.write(text.replace("max_turns: 21", "max_turns: 29"))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = config.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    new_process(monkeypatch)
    field = fields(changes(manifest, home)["bot/a"])["config:agent.max_turns"]
    assert (field["old"], field["new"], field["drift"]) == (29, 21, True)


def test_a_damaged_cache_is_ignored(
    home: Path, manifests: Path, fresh_parser: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller.adapters import parsecache

    manifest = fleet_with_routines(manifests, bots=2, routines=0)
    assert apply(manifest, home).code == 0
    for damage in ("{not json", json.dumps({"version": 99, "documents": {}}), json.dumps([1, 2])):
        parsecache.cache_path(home).write_text(damage)
        new_process(monkeypatch)
        fresh_parser.clear()
        assert plan(manifest, home, "--detailed-exitcode").code == 0
        assert fresh_parser  # everything parsed again, nothing wrong


def test_without_syncfs_every_file_and_folder_of_the_staging_tree_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "staging"
    (tree / "cron").mkdir(parents=True)
    for rel in ("config.yaml", ".env", "cron/jobs.json"):
        (tree / rel).write_text("x")
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd))[1])
    monkeypatch.setattr(fsio, "_syncfs", lambda fd: False)  # a C library without syncfs(2)
    fsio.sync_filesystem(tree)
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in synced) == [
        "staging", "staging/.env", "staging/config.yaml", "staging/cron", "staging/cron/jobs.json",
    ]  # fmt: skip


def test_inside_deferred_no_write_is_fsynced_and_a_failing_sync_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_fsyncs(monkeypatch)
    with fsio.deferred():
        fsio.atomic_write_text(tmp_path / "a", "x")
    assert calls == [] and (tmp_path / "a").read_text() == "x"

    def failing(fd: int) -> bool:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(fsio, "_syncfs", failing)
    with pytest.raises(HermesStateError, match=r"cannot sync .*I/O error"):
        fsio.sync_filesystem(tmp_path)


def test_a_group_holds_at_most_its_limit_of_folder_descriptors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_fsyncs(monkeypatch)
    monkeypatch.setattr(fsio, "GROUP_MAX_FOLDERS", 2)
    before = len(os.listdir("/proc/self/fd"))
    with fsio.grouped():
        for i in range(5):
            (tmp_path / f"d{i}").mkdir()
            fsio.atomic_write_text(tmp_path / f"d{i}" / "f", "x")
            assert len(os.listdir("/proc/self/fd")) <= before + 2
        assert calls.count("dir") == 4  # d0..d3 synced early, two at a time; d4 still held
    assert calls.count("dir") == 5 and calls.count("file") == 5
    assert len(os.listdir("/proc/self/fd")) == before


def stopping_after(calls: int) -> Any:
    """A should_stop that says "stop" from its `calls`+1-th question on (a watch shutdown)."""
    asked = [0]

    def should_stop() -> bool:
        asked[0] += 1
        return asked[0] > calls

    return should_stop


def run_once(manifest: Path, home: Path, should_stop: Any) -> Any:
    from controller.engine import reconciling
    from controller.manifests import reading

    loaded = reading.load_paths([str(manifest)], recursive=True, fleet=None)
    assert loaded.state is not None
    return reconciling.apply_once(
        reconciling.ApplyRequest(root=home, state=loaded.state, files=[str(manifest)], should_stop=should_stop)
    )[1]


def test_a_stop_before_anything_is_written_writes_no_profile_and_no_job(home: Path, manifests: Path) -> None:
    manifest = fleet_with_routines(manifests, bots=3, routines=2)
    result = run_once(manifest, home, stopping_after(0))
    assert result.abandoned and result.outcomes == []
    assert not (home / "profiles").exists() or not any((home / "profiles").iterdir())
    inventory = (inventory_file.read(home, "acme") or {}).get("objects", {})
    assert not [key for key in inventory if key.startswith("routine/")]  # no job id written ahead
    assert apply(manifest, home).code == 0
    assert_converged(manifest, home)


def test_a_stop_between_bots_keeps_each_new_bot_whole_with_its_recorded_routines(home: Path, manifests: Path) -> None:
    manifest = fleet_with_routines(manifests, bots=3, routines=2)
    result = run_once(manifest, home, stopping_after(2))  # the write-ahead's question, then bot0's
    assert result.abandoned
    assert sorted(o.change.key for o in result.outcomes if o.ok) == ["bot/bot0", "routine/bot0/r0", "routine/bot0/r1"]
    assert sorted(p.name for p in (home / "profiles").iterdir()) == ["bot0"]  # no staging folder left
    jobs = json.loads((home / "profiles" / "bot0" / "cron" / "jobs.json").read_text())["jobs"]
    inventory = (inventory_file.read(home, "acme") or {}).get("objects", {})
    assert {j["id"] for j in jobs} == {inventory[f"routine/bot0/r{r}"]["job_id"] for r in range(2)}
    assert all(inventory[f"routine/bot0/r{r}"]["applied"] for r in range(2))
    assert apply(manifest, home).code == 0
    assert_converged(manifest, home)
    again = json.loads((home / "profiles" / "bot0" / "cron" / "jobs.json").read_text())["jobs"]
    assert again == jobs  # bot0's jobs were kept, not made again


def test_the_fallback_sync_skips_links_and_fifos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "staging"
    (tree / "skills").mkdir(parents=True)
    (tree / "config.yaml").write_text("x")
    os.mkfifo(tree / "skills" / "pipe")  # would block an O_RDONLY open
    (tree / "skills" / "link").symlink_to(tmp_path / "elsewhere")
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd))[1])
    monkeypatch.setattr(fsio, "_syncfs", lambda fd: False)
    fsio.sync_filesystem(tree)
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in synced) == [
        "staging",
        "staging/config.yaml",
        "staging/skills",
    ]
