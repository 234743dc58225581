"""The git source bounded: a hung remote, a shutdown while git hangs, a killed checkout, a --path link.

The hung remote is a loopback TCP server that accepts and never answers, used as an http:// git
remote (real git, real git-remote-http). A killed checkout is reproduced as SIGKILL leaves it: git
creates `<file>.lock` with O_EXCL and removes it when it ends; a SIGKILL skips the removal.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.adapters.sources import GitSource, SourceError, remove_stale_locks
from tests.watch.harness import cli, git, title
from tests.watch.test_watch_git import Remote


class Silent:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.held: list[socket.socket] = []
        self.accepted = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/fleet.git"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


def _git_children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def test_a_hung_remote_fails_the_pass_within_the_git_timeout(user: Path, home: Path, silent: Silent) -> None:
    started = time.monotonic()
    run = cli(user, "watch", "--once", "--git", silent.url, "--git-timeout", "2s", "--home", home, timeout=30)
    took = time.monotonic() - started
    assert silent.accepted.is_set(), "git reached the remote"
    assert run.returncode == 1, run.stdout + run.stderr
    # git's http low-speed limit (half the timeout) or our deadline, whichever ends it first
    assert "result=source-error" in run.stdout, run.stdout
    assert "Operation too slow" in run.stdout or "no answer within 2s" in run.stdout, run.stdout
    assert took < 12, f"the pass took {took:.1f}s"


def test_a_hung_ssh_remote_is_killed_at_the_deadline(user: Path, home: Path, tmp_path: Path) -> None:
    """No low-speed limit helps here (ssh): the deadline kills git and its ssh."""
    folder = tmp_path / "bin"
    folder.mkdir()
    pids = tmp_path / "ssh.pid"
    (folder / "ssh").write_text(f'#!/bin/sh\necho $$ > "{pids}"\nexec sleep 60\n')
    (folder / "ssh").chmod(0o755)
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    started = time.monotonic()
    run = cli(user, "watch", "--once", "--git", "ssh://git@git.example.invalid/fleet.git", "--git-timeout", "2s",
              "--home", home, timeout=30, PATH=path)  # fmt: skip
    took = time.monotonic() - started
    assert run.returncode == 1 and "no answer within 2s (killed)" in run.stdout, run.stdout + run.stderr
    assert took < 10, f"the pass took {took:.1f}s"
    ssh_pid = int(pids.read_text())
    assert not Path(f"/proc/{ssh_pid}").exists() or Path(f"/proc/{ssh_pid}/stat").read_text().split()[2] == "Z"


def test_sigterm_ends_watch_while_git_hangs(spawn, home: Path, silent: Silent) -> None:
    watch = spawn("--git", silent.url, "--home", home, "--interval", "1")  # default timeout: 60s
    watch.wait_for("started", timeout=30)
    assert silent.accepted.wait(30), "git never reached the remote"
    time.sleep(0.5)
    helpers = _git_children(watch.proc.pid)
    assert helpers, "a git command is running"
    started = time.monotonic()
    assert watch.stop(timeout=5) == 0
    assert time.monotonic() - started < 5
    run = next(e for e in watch.events if e["event"] == "reconciled")
    assert run["result"] == "interrupted" and "stopped on request" in run["message"], watch.transcript()
    time.sleep(0.2)
    left = [
        pid for pid in helpers if Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    ]
    assert not left, "git and its helpers are gone with the watcher"


def _cache(home: Path, url: str) -> Path:
    return home / ".hermes-fleet" / "git" / hashlib.sha256(url.encode()).hexdigest()[:16]


def _group_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


def _live_members(group: int) -> list[int]:
    """Processes of process group `group` that are not zombies (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                out.append(int(entry))
    return out


def test_sigterm_ends_watch_once_while_git_hangs_and_kills_gits_process_group(spawn, home: Path, silent: Silent) -> None:
    """`--once` has no loop to stop: the CLI's SIGTERM handler interrupts the pass, and the git
    command (in its own process group, with git-remote-http) is killed on the way out."""
    watch = spawn("--once", "--git", silent.url, "--home", home)  # default --git-timeout: 60s
    assert silent.accepted.wait(30), "git never reached the remote"
    time.sleep(0.5)
    helpers = _git_children(watch.proc.pid)
    assert helpers, "a git command is running"
    groups = {_group_of(pid) for pid in helpers}
    assert watch.proc.pid not in groups and all(_live_members(g) for g in groups), "git runs in a process group of its own"
    started = time.monotonic()
    code = watch.stop(timeout=5)
    assert time.monotonic() - started < 5
    assert code == 143, watch.transcript() + watch.stderr
    assert "interrupted (SIGTERM)" in watch.stderr and "Traceback" not in watch.stderr
    deadline = time.monotonic() + 2
    while any(_live_members(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [_live_members(g) for g in groups if _live_members(g)], "git and its helpers are gone with the watcher"


def test_a_checkout_killed_by_sigkill_recovers_on_the_next_run(user: Path, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha", "title": "First"}], "first")
    remote.push()
    once = ("watch", "--once", "--git", remote.url, "--path", "fleet", "--home", home)
    assert cli(user, *once).returncode == 0
    second = remote.commit([{"name": "alpha", "title": "Second"}], "second")
    remote.push()
    dot_git = _cache(home, remote.url) / ".git"
    # What a SIGKILL during fetch + checkout leaves: git's own locks (empty or partly written).
    for name in ("index.lock", "shallow.lock", "HEAD.lock", "refs/remotes/origin/main.lock", "packed-refs.lock"):
        (dot_git / name).parent.mkdir(parents=True, exist_ok=True)
        (dot_git / name).write_bytes(b"")
    run = cli(user, *once)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "git_locks_removed" in run.stdout and "index.lock" in run.stdout
    assert "result=applied" in run.stdout and second[:16] in run.stdout, run.stdout
    assert title(home, "alpha") == "Second"
    assert not list(dot_git.rglob("*.lock"))


def test_the_stale_locks_are_real_obstacles_to_git(tmp_path: Path, remote: Remote) -> None:
    """Without the clean-up, the leftover index.lock fails git's checkout (the bug this fixes)."""
    remote.commit([{"name": "alpha"}], "one")
    remote.push()
    work = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote.bare), str(work))
    (work / ".git" / "index.lock").write_bytes(b"")
    import subprocess

    done = subprocess.run(["git", "checkout", "--detach", "HEAD~0"], cwd=work, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "index.lock" in done.stderr
    assert remove_stale_locks(work / ".git") == ["index.lock"]


def test_a_half_made_cache_is_rebuilt(user: Path, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha"}], "one")
    remote.push()
    dot_git = _cache(home, remote.url) / ".git"
    dot_git.mkdir(parents=True)  # a `git init` killed before it wrote HEAD
    run = cli(user, "watch", "--once", "--git", remote.url, "--path", "fleet", "--home", home)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (home / "profiles" / "alpha").is_dir()


@pytest.mark.parametrize("target", ["outside", "dotdot", "git-dir"])
def test_a_path_leading_out_of_the_repository_is_refused(
    user: Path, remote: Remote, home: Path, tmp_path: Path, target: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    remote.commit([{"name": "alpha"}], "one")
    from tests.watch.harness import write_fleet

    write_fleet(outside / "fleet.yaml", [{"name": "intruder"}])
    link = {"outside": str(outside), "dotdot": "../../../../outside", "git-dir": ".git"}[target]
    os.symlink(link, remote.work / "linked")
    git(remote.work, "add", "-A")
    git(remote.work, "commit", "-q", "-m", "a link")
    remote.push()
    run = cli(user, "watch", "--once", "--git", remote.url, "--path", "linked", "--home", home)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "leads out of the repository" in run.stdout, run.stdout
    assert not (home / "profiles" / "intruder").exists()


def test_path_with_dotdot_is_refused(tmp_path: Path, remote: Remote) -> None:
    remote.commit([{"name": "alpha"}], "one")
    remote.push()
    (tmp_path / "cache" / "x").mkdir(parents=True)
    source = GitSource(remote.url, ref="main", path="../..", cache_root=tmp_path / "cache")
    with pytest.raises(SourceError, match="leads out of the repository"):
        source.snapshot()


def test_a_link_inside_the_repository_is_followed(user: Path, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha"}], "one")
    os.symlink("fleet", remote.work / "current")
    git(remote.work, "add", "-A")
    git(remote.work, "commit", "-q", "-m", "a link inside")
    remote.push()
    run = cli(user, "watch", "--once", "--git", remote.url, "--path", "current", "--home", home)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (home / "profiles" / "alpha").is_dir()


def test_git_timeout_must_be_positive(user: Path, home: Path) -> None:
    run = cli(user, "watch", "--once", "--git", "http://127.0.0.1:9/x.git", "--git-timeout", "0", "--home", home)
    assert run.returncode == 2 and "--git-timeout must be more than 0" in run.stderr, run.stdout + run.stderr


def test_ctrl_c_during_a_git_command_takes_git_and_its_helpers_along(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception in the waiting loop (Ctrl-C lands there) kills the process group first."""
    folder = tmp_path / "bin"
    folder.mkdir()
    pids = tmp_path / "ssh.pid"
    (folder / "ssh").write_text(f'#!/bin/sh\necho $$ > "{pids}"\nexec sleep 60\n')
    (folder / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    started = time.monotonic()

    def interrupt() -> bool:
        if pids.exists() and time.monotonic() - started > 0.3:
            raise KeyboardInterrupt
        return False

    source = GitSource(
        "ssh://git@git.example.invalid/f.git", ref="main", path=".", cache_root=tmp_path / "c", should_stop=interrupt
    )
    with pytest.raises(KeyboardInterrupt):
        source.snapshot()
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    ssh = Path(f"/proc/{int(pids.read_text())}")
    assert not ssh.exists() or (ssh / "stat").read_text().split()[2] == "Z"
