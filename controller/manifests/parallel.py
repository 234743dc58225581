"""Parsing a share of the manifest files in a forked child, while this process parses the rest.

A fleet kept as many files (one Bot and its Routines per document, a hundred bots per file) spends
about half of `validate` in the YAML parser, and the parser holds the GIL: a thread would not help,
a second process does. When it is safe and worth it (`start`), the last files (by size, a little
under half of the bytes) go to a child made by fork(), which reads and parses them by the fast path
only (`loading.fast_parse`) and sends back their data and positions, pickled, through a pipe.

The child never judges a file: a file it cannot read, or whose text needs the node path (a syntax
error, an alias, a tag, any bound), comes back as "not parsed", and this process parses it as it
would have without a child, so every diagnostic still comes from one place. Anything that goes
wrong with the child itself (it dies, its answer does not unpickle, it takes too long) costs only
time: its files are parsed here. The result is the same documents in the same order either way
(tests/unit/test_parallel_parse.py).

Fork is used only when this process has one thread (a fork of a threaded process can copy a lock
another thread holds), two or more CPUs are ours to use (the affinity mask, and a container's CPU
limit read from its cgroup), and the child's share is large enough to repay the fork and the
pickling (MIN_SHARE_BYTES).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

MIN_SHARE_BYTES = 128 * 1024  # below this, fork + pickle cost about what the child saves
CHILD_SHARE = 0.42  # of the bytes: the child also pickles what it parsed
DEADLINE_SECONDS = 30.0  # after this process's own share is done (a parse of 32 MB takes ~4 s)

# (text, [(index, data)], {id(list or dict): position}) of a file, or None: parse it here
Parsed = tuple[str, list[tuple[int, Any]], dict[int, int]]


class Child:
    """A forked child parsing `names`; `results()` waits for its answer."""

    def __init__(self, names: list[str], pid: int, fd: int, deadline: float) -> None:
        self.names = names
        self.pid = pid
        self.fd = fd
        self.deadline = deadline

    def results(self) -> dict[str, Parsed]:
        """What the child parsed, by file name (missing: parse that file here). Reaps the child."""
        import pickle  # here, not at the top: most runs never fork (start-up, docs/performance.md)

        try:
            blob = self._read(time.monotonic() + self.deadline)
            if blob is None or not self._exited_cleanly():
                return {}
            answer = pickle.loads(blob)
        except Exception:  # a broken answer: its files are parsed here
            return {}
        finally:
            self.close()
        return {name: (text, documents, {id(obj): at for obj, at in pairs}) for name, (text, documents, pairs) in answer.items()}

    def _read(self, until: float) -> bytes | None:
        """The child's whole answer, or None when it does not come by `until`."""
        chunks = bytearray()
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            left = until - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return bytes(chunks)
            chunks += chunk

    def _exited_cleanly(self) -> bool:
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return os.waitstatus_to_exitcode(status) == 0

    def close(self) -> None:
        """Stop waiting: close the pipe, end the child if it still runs, and reap it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid:
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = 0


def start(files: list[str], parse: Callable[[str], Parsed | None], *, force: bool = False) -> Child | None:
    """Fork a child that parses the last files of `files` with `parse` (None: no child, parse all
    here). `force` skips the checks of worth (tests use it on small fleets), never those of safety."""
    share = _share(files, MIN_SHARE_BYTES if not force else 0)
    if not share or not _can_fork():  # the cheap check first: most fleets never look at /proc
        return None
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(share, parse, write_fd)
    os.close(write_fd)
    return Child(share, pid, read_fd, DEADLINE_SECONDS)


_one_process = threading.local()


@contextlib.contextmanager
def in_one_process() -> Iterator[None]:
    """Parse everything in this process for the block (the settled plan's traced run: a fork, and
    the looks at /proc that decide on one, have no stat key: verbs/plan.py `settle`)."""
    _one_process.on = True
    try:
        yield
    finally:
        _one_process.on = False


def _can_fork() -> bool:
    if getattr(_one_process, "on", False):
        return False
    if not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return False
    try:
        if len(os.sched_getaffinity(0)) < 2 or cpu_quota() < 2:
            return False
        return len(os.listdir("/proc/self/task")) == 1  # this process's threads, Python's or not
    except OSError:
        return False


def cpu_quota(cgroup_root: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> float:
    """The CPUs this process's cgroup may use (a container's CPU limit; inf: no limit found). Two
    processes under a limit of one CPU would only throttle each other."""
    for _, controllers, path in (line.split(":", 2) for line in _read(own).splitlines() if line.count(":") >= 2):
        folder = os.path.join(cgroup_root, path.lstrip("/"))
        if controllers == "":  # cgroup v2: cpu.max is "<quota> <period>" or "max <period>"
            quota, _, period = _read(os.path.join(folder, "cpu.max")).partition(" ")
        elif "cpu" in controllers.split(","):  # cgroup v1: a quota of -1 is no limit
            folder = os.path.join(cgroup_root, "cpu", path.lstrip("/"))
            quota, period = _read(os.path.join(folder, "cpu.cfs_quota_us")), _read(os.path.join(folder, "cpu.cfs_period_us"))
        else:
            continue
        if quota.strip().isdigit() and period.strip().isdigit() and int(period) > 0:
            return int(quota) / int(period)
    return math.inf


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return ""


def _share(files: list[str], minimum: int) -> list[str]:
    """The last regular files of `files` holding about CHILD_SHARE of their bytes ([]: none)."""
    sizes: list[int] = []
    for name in files:
        try:
            st = os.stat(name) if name != "-" else None
        except OSError:
            st = None
        sizes.append(st.st_size if st is not None and stat.S_ISREG(st.st_mode) else -1)
    total = sum(size for size in sizes if size > 0)
    taken, first = 0, len(files)
    while first > 1 and sizes[first - 1] >= 0 and taken + sizes[first - 1] <= CHILD_SHARE * total:
        first -= 1
        taken += sizes[first]
    if taken < minimum or first == len(files):
        return []
    return files[first:]


def _child(names: list[str], parse: Callable[[str], Parsed | None], fd: int) -> NoReturn:
    """Parse `names`, write the pickled answer to `fd`, and exit without running this process's
    exit handlers or flushing its buffers (they are the parent's)."""
    import pickle
    import signal

    code = 1
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)  # the parent's handlers are not the child's to run
        answer: dict[str, tuple[str, list[tuple[int, Any]], list[tuple[Any, int]]]] = {}
        for name in names:
            try:
                parsed = parse(name)
            except Exception:
                parsed = None
            if parsed is not None:
                text, documents, positions = parsed
                answer[name] = (text, documents, _pairs(documents, positions))
        # Pickle keeps identity: each (collection, position) pair names the very list or dict
        # inside `documents`, so the parent can key the positions by its own objects' ids.
        view = memoryview(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
        while view:
            view = view[os.write(fd, view) :]
        code = 0
    finally:
        os._exit(code)


def _pairs(documents: list[tuple[int, Any]], positions: dict[int, int]) -> list[tuple[Any, int]]:
    """(collection, position) for every list and dict in `documents` that has a position."""
    pairs: list[tuple[Any, int]] = []
    stack = [data for _, data in documents]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls is dict:
            values: Any = node.values()
        elif cls is list:
            values = node
        else:
            continue
        at = positions.get(id(node))
        if at is not None:
            pairs.append((node, at))
        stack.extend(value for value in values if value.__class__ is dict or value.__class__ is list)
    return pairs
