"""Parsing a share of the files in a forked child (controller/manifests/parallel.py): the same
documents, positions and diagnostics as one process gives, and nothing lost when the child fails."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.manifests import loading, parallel

if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
    pytest.skip("a forked parse needs two CPUs (this machine gives one)", allow_module_level=True)

BOTS = """\
apiVersion: hermes-fleet/v1
kind: Bot
metadata: {{name: bot-{i}, fleet: f}}
spec:
  title: Bot {i}
  toolsets: [web, terminal]
  env: {{KEY: {{from_env: KEY}}, LEVEL: info}}
  config:
    memory: {{memory_char_limit: {i}}}
---
apiVersion: hermes-fleet/v1
kind: Routine
metadata:
  name: digest
  fleet: f
spec:
  bot: bot-{i}
  schedule: "0 8 * * *"
  prompt: |
    Summarize the news for bot {i}.
"""

# Files the child hands back unparsed (each needs the node path, or cannot be read): the parent
# parses or reports each of them as one process would.
AWKWARD = {
    "x1-alias.yaml": "base: &b {a: 1}\nother: *b\n",
    "x2-tag.yaml": "value: !!str 12\n",
    "x3-syntax.yaml": "a: [1, 2\n",
    "x4-duplicate.yaml": "a: 1\na: 2\n",
    "x5-binary.yaml": b"a: 1\x00\n",
    "x6-merge.yaml": "base: &b {a: 1}\nother:\n  <<: *b\n  c: 2\n",
}


@pytest.fixture(autouse=True)
def one_thread() -> None:
    """A process with a second thread never forks (parallel._can_fork): a thread an earlier test
    left running would turn these tests into tests of one process."""
    tasks = os.listdir("/proc/self/task")
    assert len(tasks) == 1, f"an earlier test left threads running: {[t.name for t in threading.enumerate()]}"


def fleet(folder: Path, files: int = 12, bots: int = 20) -> list[str]:
    """`files` files of `bots` Bot + Routine pairs, then the awkward ones (last: the child's share)."""
    folder.mkdir(exist_ok=True)
    for f in range(files):
        text = "---\n".join(BOTS.format(i=f * bots + b) for b in range(bots))
        (folder / f"b{f:03d}.yaml").write_text(text)
    for name, content in AWKWARD.items():
        path = folder / name
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return loading.discover([str(folder)])


def spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[parallel.Child, int]]:
    """Record each child parallel.start gives load_files, with its pid."""
    started: list[tuple[parallel.Child, int]] = []
    real = parallel.start

    def start(*args: Any, **kwargs: Any) -> parallel.Child | None:
        child = real(*args, **kwargs)
        if child is not None:
            started.append((child, child.pid))
        return child

    monkeypatch.setattr(parallel, "start", start)
    return started


def outcome(files: list[str], *, fork: bool) -> tuple[list[Any], list[Any]]:
    """Each document's source, index, data and the position of every list and map in it (by path),
    and the diagnostics: what validation sees of a load."""
    documents, problems = loading.load_files(files, fork=fork)
    seen = [(doc.source, doc.index, doc.data, doc.base_dir, sorted(positions(doc))) for doc in documents]
    return seen, [p.render() for p in problems]


def positions(doc: loading.Document) -> list[tuple[tuple[object, ...], tuple[int, int]]]:
    out = []
    stack: list[tuple[tuple[object, ...], Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        out.append((path, doc.locate(path)))
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend(((*path, key), child) for key, child in items)
    return out


def assert_reaped(pid: int) -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_forked_parse_gives_the_documents_positions_and_problems_one_process_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = fleet(tmp_path / "fleet")
    alone = outcome(files, fork=False)
    started = spy(monkeypatch)
    forked = outcome(files, fork=True)
    assert len(started) == 1, "no child was forked"
    child, pid = started[0]
    assert child.names[0].startswith(str(tmp_path / "fleet" / "b")) and child.names[-1].endswith("x6-merge.yaml")
    assert set(AWKWARD) <= {Path(name).name for name in child.names}
    assert forked == alone
    assert len(alone[1]) == 3  # syntax, duplicate key, binary: reported by this process, once each
    assert_reaped(pid)


def in_child(monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]) -> None:
    """loading.fast_parse does `act` first when it runs in a forked child; this process parses as usual."""
    parent = os.getpid()
    real = loading.fast_parse

    def parse(name: str) -> Any:
        if os.getpid() != parent:
            act()
        return real(name)

    monkeypatch.setattr(loading, "fast_parse", parse)


def assert_parsed_here(files: list[str], alone: tuple[list[Any], list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """One child was made, came to nothing, was reaped, and the load is the one-process load."""
    started = spy(monkeypatch)
    assert outcome(files, fork=True) == alone
    assert len(started) == 1
    assert_reaped(started[0][1])


def test_the_child_share_is_parsed_here_when_the_child_dies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = fleet(tmp_path / "fleet")
    alone = outcome(files, fork=False)
    in_child(monkeypatch, lambda: os._exit(3))
    assert_parsed_here(files, alone, monkeypatch)


def test_a_child_that_hangs_is_ended_and_its_share_parsed_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = fleet(tmp_path / "fleet")
    alone = outcome(files, fork=False)
    in_child(monkeypatch, lambda: time.sleep(600))
    monkeypatch.setattr(parallel, "DEADLINE_SECONDS", 0.5)
    began = time.monotonic()
    assert_parsed_here(files, alone, monkeypatch)
    assert time.monotonic() - began < 60


def test_an_answer_that_cannot_be_pickled_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = fleet(tmp_path / "fleet")
    alone = outcome(files, fork=False)
    real = loading.fast_parse

    def unpicklable(name: str) -> Any:
        got = real(name)
        return None if got is None else (got[0], [(0, {"lock": threading.Lock()})], {})

    monkeypatch.setattr(loading, "fast_parse", unpicklable)
    child = parallel.start(files, loading.fast_parse, force=True)
    assert child is not None
    pid = child.pid
    assert child.results() == {}  # the child exits 1 before writing: the parent parses its share
    assert_reaped(pid)
    monkeypatch.setattr(loading, "fast_parse", real)
    assert outcome(files, fork=True) == alone


def test_no_fork_while_another_thread_runs(tmp_path: Path) -> None:
    files = fleet(tmp_path / "fleet")
    control = parallel.start(files, loading.fast_parse, force=True)  # without the thread, it forks
    assert control is not None
    control.close()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert parallel.start(files, loading.fast_parse, force=True) is None
    finally:
        stop.set()
        thread.join()


def test_a_small_fleet_is_parsed_in_one_process(tmp_path: Path) -> None:
    files = fleet(tmp_path / "fleet", files=3, bots=2)
    assert parallel.start(files, loading.fast_parse) is None  # under MIN_SHARE_BYTES: not worth a fork


def test_the_share_is_the_last_regular_files_holding_under_half_the_bytes(tmp_path: Path) -> None:
    names = []
    for i, size in enumerate([100, 300, 200, 200, 100]):
        path = tmp_path / f"{i}.yaml"
        path.write_text("x" * size)
        names.append(str(path))
    assert parallel._share(names, 0) == names[3:]  # 300 of 900 bytes; one more file would pass 0.42
    assert parallel._share(names, 301) == []  # under the minimum
    os.mkfifo(tmp_path / "fifo.yaml")
    assert parallel._share([*names, str(tmp_path / "fifo.yaml")], 0) == []  # a FIFO is read by the parent only
    assert parallel._share([*names, "-"], 0) == []  # so is stdin
    assert parallel._share(names[:1], 0) == []  # one file: nothing to share


def test_the_child_does_not_run_this_process_signal_handlers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reconciler's SIGTERM handler (write its status, stop) is its own: a child ended by SIGTERM
    just ends."""
    files = fleet(tmp_path / "fleet")
    ready, handled = tmp_path / "ready", tmp_path / "handled"
    in_child(monkeypatch, lambda: (ready.touch(), time.sleep(600)))
    previous = signal.signal(signal.SIGTERM, lambda *_: handled.write_text(str(os.getpid())))
    child = parallel.start(files, loading.fast_parse, force=True)
    try:
        assert child is not None
        pid = child.pid
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGTERM)
        status = 0
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                child.pid = 0
                break
            time.sleep(0.01)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
        assert not handled.exists()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if child is not None:
            child.close()


@pytest.mark.parametrize(
    ("own", "files", "cpus"),
    [
        ("0::/ci/job\n", {"ci/job/cpu.max": "50000 100000\n"}, 0.5),  # cgroup v2, half a CPU
        ("0::/ci/job\n", {"ci/job/cpu.max": "max 100000\n"}, float("inf")),
        ("0::/\n", {"cpu.max": "400000 100000\n"}, 4.0),
        (
            "4:memory:/x\n3:cpu,cpuacct:/ci\n",
            {"cpu/ci/cpu.cfs_quota_us": "150000\n", "cpu/ci/cpu.cfs_period_us": "100000\n"},
            1.5,
        ),
        ("3:cpu,cpuacct:/ci\n", {"cpu/ci/cpu.cfs_quota_us": "-1\n", "cpu/ci/cpu.cfs_period_us": "100000\n"}, float("inf")),
        ("3:cpu:/ci\n", {}, float("inf")),  # no files to read: no limit found
        ("0::/\n", {"cpu.max": "junk\n"}, float("inf")),
        ("", {}, float("inf")),
    ],
)
def test_a_container_cpu_limit_is_read_from_the_cgroup(tmp_path: Path, own: str, files: dict[str, str], cpus: float) -> None:
    (tmp_path / "self-cgroup").write_text(own)
    for name, text in files.items():
        (tmp_path / "fs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fs" / name).write_text(text)
    assert parallel.cpu_quota(str(tmp_path / "fs"), str(tmp_path / "self-cgroup")) == cpus


def test_no_fork_under_a_limit_of_one_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = fleet(tmp_path / "fleet")
    monkeypatch.setattr(parallel, "cpu_quota", lambda: 1.5)
    assert parallel.start(files, loading.fast_parse, force=True) is None
