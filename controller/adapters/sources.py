"""Where the reconciler reads manifests from: local paths, or a git repository.

A source hands out `Snapshot`s: the manifest files to load and a revision (a content digest for
local files, the exact commit for git). `GitSource` keeps a clone under the home
(`.hermes-fleet/git/`), fetches, and checks out the exact commit; an unreachable remote or a
rewritten history is reported as a `SourceError` and the last good revision stays applied.
Called by watching.py. Git runs as a child process of ours (not through a library), each command
in its own process group, bounded by a deadline and ended at once on shutdown.

A URL may carry a credential (`https://TOKEN@host/...`). It is used only on git's command line:
the clone has no `origin` remote holding it (each fetch names the URL), reflogs get a fixed
action name, and every message and label shows `redact_url(url)`; git's own error text goes
through `redact_text`. So the token reaches no log, status file or file of the cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from controller import bounded
from controller.errors import SourceError, TooLarge
from controller.redact import redact_text, redact_url

MAX_MANIFEST_BYTES = 32 * 1024 * 1024  # what the loader reads at most; larger files only count as changed


@dataclass(frozen=True)
class Snapshot:
    paths: list[str]  # what to pass to the loader (files or folders)
    recursive: bool
    revision: str
    label: str


# Editors write these while saving; they are never manifests and must not trigger a run.
_TEMP_SUFFIXES = (".swp", ".swx", ".swo", ".tmp", "~", ".bak", ".part", ".crdownload")
_TEMP_PREFIXES = (".#", "#", ".~")


def is_editor_temp(path: str) -> bool:
    name = os.path.basename(path)
    return (
        name.endswith(_TEMP_SUFFIXES)
        or name.startswith(_TEMP_PREFIXES)
        or name == "4913"
        or (name.startswith(".") and not name.endswith((".yaml", ".yml", ".json")))
    )


class LocalSource:
    """`-f` paths on this machine; the revision is a digest of every file under them."""

    def __init__(self, paths: list[str], *, recursive: bool) -> None:
        self.paths = paths
        self.recursive = recursive

    def snapshot(self) -> Snapshot:
        digest = hashlib.sha256()
        for file in sorted(self._files()):
            digest.update(file.encode())
            try:
                digest.update(bounded.read_bytes(file, MAX_MANIFEST_BYTES))
            except TooLarge as exc:
                digest.update(b"\0too large %d" % exc.size)  # the loader refuses it with a clear error
            except OSError:
                digest.update(b"\0unreadable")
        return Snapshot(self.paths, self.recursive, "sha256:" + digest.hexdigest()[:16], "files " + " ".join(self.paths))

    def _files(self) -> list[str]:
        out: list[str] = []
        for raw in self.paths:
            path = Path(raw)
            if path.is_file():
                out.append(str(path))
            elif path.is_dir():
                walker = path.rglob("*") if self.recursive else path.glob("*")
                out.extend(str(p) for p in walker if p.is_file() and not is_editor_temp(str(p)))
        return out

    def watch_roots(self) -> list[Path]:
        """Folders to watch (a file's folder, so editors that replace the file are seen too)."""
        roots = {(Path(p) if Path(p).is_dir() else Path(p).parent).resolve() for p in self.paths}
        return sorted(roots)


FETCH_REFSPECS = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
GIT_TIMEOUT = 60.0  # seconds one git command may take (watch --git-timeout)
STOP_POLL = 0.1  # how often a running git command looks at the stop request
# Lock files git creates (O_EXCL) and removes when it ends; a SIGKILL leaves them behind.
GIT_LOCKS = ("index.lock", "shallow.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "config.lock", "packed-refs.lock")


class GitFailed(Exception):
    """A git command that exited non-zero; `stderr` is git's own text (may quote the URL)."""

    def __init__(self, args: tuple[str, ...], code: int, stderr: str) -> None:
        super().__init__(f"git {args[0]} exited {code}")
        self.code = code
        self.stderr = stderr


class GitSource:
    """A git repository: clone once into the home, then fetch and check out the exact commit.

    Every git command runs in its own process group with a deadline (`timeout`) and looks at
    `should_stop` every STOP_POLL: a hung remote fails the pass, a shutdown kills the command
    (and its helpers: git-remote-http, ssh) at once. The cache is used under a lock of our own
    (`<key>.lock` beside it); holding it, any git lock file in the cache is a leftover of a killed
    command and is removed."""

    def __init__(
        self,
        url: str,
        *,
        ref: str,
        path: str,
        cache_root: Path,
        ssh_key: str | None = None,
        timeout: float = GIT_TIMEOUT,
        should_stop: Callable[[], bool] = lambda: False,
        log: Callable[..., None] = lambda _name, **_fields: None,
    ) -> None:
        self.url = url
        self.ref = ref
        self.subpath = path.strip("/") or "."
        key = hashlib.sha256(url.encode()).hexdigest()[:16]
        self.checkout = cache_root / key
        self.ssh_key = ssh_key
        self.timeout = timeout
        self.should_stop = should_stop
        self.log = log
        self.last_good: str | None = None

    @property
    def label(self) -> str:
        """The URL as every message shows it (no credential)."""
        return redact_url(self.url)

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
        env.update(
            {
                "GIT_TERMINAL_PROMPT": "0",  # a password prompt would hang a headless reconciler
                "GIT_REFLOG_ACTION": "hermes-fleet fetch",  # else reflogs record the command line, URL included
                # A transfer slower than 1 KB/s for half the deadline ends itself (http); the deadline ends the rest.
                "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
                "GIT_HTTP_LOW_SPEED_TIME": str(max(1, int(self.timeout / 2))),
            }
        )
        if self.ssh_key:
            env["GIT_SSH_COMMAND"] = (
                f"ssh -i {shlex.quote(self.ssh_key)} -o IdentitiesOnly=yes -o BatchMode=yes "
                f"-o ConnectTimeout={max(1, int(self.timeout))}"
            )
        return env

    def _git(self, *args: str, check: bool = True) -> str:
        """Run `git args` in the cache; its stdout. GitFailed on a non-zero exit (when `check`), a
        SourceError when the deadline passes or a stop is requested (the command is killed)."""
        proc = subprocess.Popen(
            ["git", *args],
            cwd=self.checkout,
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: the kill reaches git's helpers too
        )
        try:  # from right after the start: a SIGTERM (`watch --once`: Terminated) takes git's group along
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    out, err = proc.communicate(timeout=STOP_POLL)
                    break
                except subprocess.TimeoutExpired:
                    stopping = self.should_stop()
                    if stopping or time.monotonic() >= deadline:
                        why = "stopped on request" if stopping else f"no answer within {self.timeout:g}s (killed)"
                        raise SourceError(
                            f"git {args[0]} {self.label} ({self.ref}): {why}",
                            hint="check that the remote answers (or raise --git-timeout); the last good revision stays applied",
                        ) from None
        except BaseException:  # the deadline, a stop, Ctrl-C: git and its helpers go with us
            _kill_group(proc)
            raise
        if check and proc.returncode != 0:
            raise GitFailed(args, proc.returncode, err.decode(errors="replace"))
        return out.decode(errors="replace").strip()

    def _check_cache_folders(self) -> None:
        for folder in (self.checkout.parent.parent, self.checkout.parent, self.checkout):
            if os.path.islink(folder):
                raise SourceError(
                    f"{folder} is a symlink; hermes-fleet keeps its git cache only in real folders of the home",
                    hint="replace the link with a real folder (or remove it: the cache is rebuilt)",
                    transient=False,
                )

    def _open_cache(self) -> None:
        """A usable repository in the cache: created, or rebuilt when a killed `init` left a broken one."""
        git_dir = self.checkout / ".git"
        if git_dir.is_dir() and not (git_dir / "HEAD").is_file():
            shutil.rmtree(self.checkout)  # only a cache: a killed `git init` left it half made
        if not git_dir.is_dir():
            self.checkout.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._git("init", "--quiet")
        removed = remove_stale_locks(git_dir)
        if removed:
            self.log("git_locks_removed", files=removed, reason="left by a git process that was killed")
        if "origin" in self._git("remote").split():
            self._git("remote", "remove", "origin")  # an older cache stored the URL (and its credential)

    @contextlib.contextmanager
    def _cache_lock(self) -> Iterator[None]:
        """Our own lock on the cache, held for a whole snapshot (a second reconciler of another home
        sharing it, or a rollout's, waits: never two gits in one cache)."""
        self._check_cache_folders()
        self.checkout.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.checkout.parent / f"{self.checkout.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if self.should_stop() or time.monotonic() >= deadline:
                        raise SourceError(
                            f"the git cache {self.checkout} is in use by another hermes-fleet process",
                            hint="the next run tries again",
                        ) from None
                    time.sleep(STOP_POLL)
            yield
        finally:
            os.close(fd)

    def snapshot(self, *, allow_rewrite: bool = False) -> Snapshot:
        try:
            with self._cache_lock():
                self._open_cache()
                # By URL, not through a remote: the URL (and any credential in it) is never stored.
                self._git("fetch", "--quiet", self.url, *FETCH_REFSPECS, "--prune", "--force", "--no-write-fetch-head")
                commit = self._resolve()
                # A ref that is itself a full commit id is a pin (a rollout's, or a rollback's): that exact
                # commit was chosen, so there is no branch history to protect.
                pinned = self.ref == commit
                if self.last_good and self.last_good != commit and not allow_rewrite and not pinned:
                    self._check_history(commit)
                self._git("checkout", "--quiet", "--force", "--detach", commit)
                self._git("clean", "-ffdxq")
        except GitFailed as exc:
            lines = [ln.strip().strip("'").strip() for ln in exc.stderr.splitlines()]
            lines = [ln for ln in lines if ln]
            fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]  # git's own reason
            detail = fatal[0] if fatal else (lines[-1] if lines else str(exc))
            raise SourceError(
                f"git {self.label} ({self.ref}): {redact_text(detail)}",
                hint="check the URL, the ref and the credentials; the last good revision stays applied",
            ) from None
        except OSError as exc:  # git missing, a read-only home, a broken cache
            raise SourceError(
                f"git {self.label} ({self.ref}): {redact_text(str(exc))}",
                hint=f"check that git is installed and that {self.checkout} is writable (remove it to rebuild the cache)",
            ) from None
        return Snapshot([str(self._folder(commit))], True, commit, f"git {self.label}@{self.ref}")

    def _folder(self, commit: str) -> Path:
        """The --path folder of the checkout; refused when it is missing or leads out of the repository."""
        folder = self.checkout / self.subpath
        if not os.path.lexists(folder):
            raise SourceError(
                f"{self.subpath!r} does not exist in {self.label} at {commit}", hint="check --path", transient=False
            )
        repo = self.checkout.resolve()
        real = folder.resolve()
        if real == repo / ".git" or (repo / ".git") in real.parents or not (real == repo or repo in real.parents):
            raise SourceError(
                f"--path {self.subpath!r} in {self.label} at {commit} leads out of the repository (a symlink or '..'); refused",
                hint="point --path at a real folder of the repository",
                transient=False,
            )
        if not real.is_dir():
            raise SourceError(
                f"{self.subpath!r} in {self.label} at {commit} is not a folder", hint="check --path", transient=False
            )
        return real

    def _resolve(self) -> str:
        for candidate in (f"origin/{self.ref}", f"refs/tags/{self.ref}", self.ref):
            try:
                return self._git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}")
            except GitFailed:
                continue
        raise SourceError(f"ref {self.ref!r} not found in {self.label}", hint="check --ref", transient=False)

    def _check_history(self, commit: str) -> None:
        try:
            self._git("merge-base", "--is-ancestor", str(self.last_good), commit)
        except GitFailed as exc:
            if exc.code != 1:  # 1: not an ancestor; anything else is git failing (reported as such)
                raise
            raise SourceError(
                f"the history of {self.label} ({self.ref}) was rewritten: the applied revision "
                f"{self.last_good} is not an ancestor of {commit} (force push?)",
                hint="the last good revision stays applied; pass --allow-history-rewrite to accept the new history",
                transient=False,
            ) from None


def remove_stale_locks(git_dir: Path) -> list[str]:
    """Remove the lock files a killed git left in `git_dir` (its own and the refs'); the caller holds
    our cache lock, so no git of ours is running there. Returns what was removed (relative paths)."""
    found = [git_dir / name for name in GIT_LOCKS]
    refs = git_dir / "refs"
    if refs.is_dir() and not refs.is_symlink():
        found += [p for p in refs.rglob("*.lock")]
    removed = []
    for path in found:
        if os.path.lexists(path):
            os.unlink(path)
            removed.append(str(path.relative_to(git_dir)))
    return removed


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=5)
