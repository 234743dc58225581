"""Where the reconciler reads manifests from: local paths, or a git repository.

A source hands out `Snapshot`s: the manifest files to load and a revision (a content digest for
local files, the exact commit for git). `GitSource` keeps a clone under the home
(`.hermes-fleet/git/`), fetches, and checks out the exact commit; an unreachable remote or a
rewritten history is reported as a `SourceError` and the last good revision stays applied.
Called by watching.py; the only module that imports GitPython.

A URL may carry a credential (`https://TOKEN@host/...`). It is used only on git's command line:
the clone has no `origin` remote holding it (each fetch names the URL), reflogs get a fixed
action name, and every message and label shows `redact_url(url)`; git's own error text goes
through `redact_text`. So the token reaches no log, status file or file of the cache.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import bounded
from controller.errors import SourceError
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
            except bounded.TooLarge as exc:
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


class GitSource:
    """A git repository: clone once into the home, then fetch and check out the exact commit."""

    def __init__(self, url: str, *, ref: str, path: str, cache_root: Path, ssh_key: str | None = None) -> None:
        self.url = url
        self.ref = ref
        self.subpath = path.strip("/") or "."
        key = hashlib.sha256(url.encode()).hexdigest()[:16]
        self.checkout = cache_root / key
        self.ssh_key = ssh_key
        self.last_good: str | None = None

    @property
    def label(self) -> str:
        """The URL as every message shows it (no credential)."""
        return redact_url(self.url)

    def _env(self) -> dict[str, str]:
        env = {
            "GIT_TERMINAL_PROMPT": "0",  # a password prompt would hang a headless reconciler
            "GIT_REFLOG_ACTION": "hermes-fleet fetch",  # else reflogs record the command line, URL included
        }
        if self.ssh_key:
            env["GIT_SSH_COMMAND"] = f"ssh -i {shlex.quote(self.ssh_key)} -o IdentitiesOnly=yes -o BatchMode=yes"
        return env

    def _repo(self) -> Any:
        import git

        for folder in (self.checkout.parent.parent, self.checkout.parent, self.checkout):
            if os.path.islink(folder):
                raise SourceError(
                    f"{folder} is a symlink; hermes-fleet keeps its git cache only in real folders of the home",
                    hint="replace the link with a real folder (or remove it: the cache is rebuilt)",
                    transient=False,
                )
        if (self.checkout / ".git").is_dir():
            repo = git.Repo(self.checkout)
            if "origin" in [r.name for r in repo.remotes]:
                repo.git.remote("remove", "origin")  # an older cache stored the URL (and its credential)
            return repo
        try:
            self.checkout.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise SourceError(
                f"cannot create the git cache {self.checkout}: {exc.strerror}",
                hint="make the Hermes home writable for this user (the cache lives in it)",
            ) from None
        return git.Repo.init(self.checkout)

    def snapshot(self, *, allow_rewrite: bool = False) -> Snapshot:
        import git

        try:
            repo = self._repo()
            with repo.git.custom_environment(**self._env()):
                # By URL, not through a remote: the URL (and any credential in it) is never stored.
                repo.git.fetch(self.url, *FETCH_REFSPECS, "--prune", "--force", "--no-write-fetch-head")
            commit = self._resolve(repo)
            # A ref that is itself a full commit id is a pin (a rollout's, or a rollback's): that exact
            # commit was chosen, so there is no branch history to protect.
            pinned = self.ref == commit
            if self.last_good and self.last_good != commit and not allow_rewrite and not pinned:
                self._check_history(repo, commit)
            repo.git.checkout("--force", "--detach", commit)
            repo.git.clean("-ffdx")
        except git.GitCommandError as exc:
            lines = [ln.strip().strip("'").strip() for ln in (exc.stderr or str(exc)).splitlines()]
            lines = [ln for ln in lines if ln]
            fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]  # git's own reason
            detail = fatal[0] if fatal else (lines[-1] if lines else str(exc))
            raise SourceError(
                f"git {self.label} ({self.ref}): {redact_text(detail)}",
                hint="check the URL, the ref and the credentials; the last good revision stays applied",
            ) from None
        except (git.GitError, OSError) as exc:  # a broken cache, git missing, a read-only home
            raise SourceError(
                f"git {self.label} ({self.ref}): {redact_text(str(exc))}",
                hint=f"check that git is installed and that {self.checkout} is writable (remove it to rebuild the cache)",
            ) from None
        folder = self.checkout / self.subpath
        if not folder.exists():
            raise SourceError(
                f"{self.subpath!r} does not exist in {self.label} at {commit[:12]}", hint="check --path", transient=False
            )
        return Snapshot([str(folder)], True, commit, f"git {self.label}@{self.ref}")

    def _resolve(self, repo) -> str:  # type: ignore[no-untyped-def]
        import git

        for candidate in (f"origin/{self.ref}", f"refs/tags/{self.ref}", self.ref):
            try:
                return str(repo.git.rev_parse("--verify", "--quiet", f"{candidate}^{{commit}}"))
            except git.GitCommandError:
                continue
        raise SourceError(f"ref {self.ref!r} not found in {self.label}", hint="check --ref", transient=False)

    def _check_history(self, repo, commit: str) -> None:  # type: ignore[no-untyped-def]
        if not repo.is_ancestor(self.last_good, commit):
            raise SourceError(
                f"the history of {self.label} ({self.ref}) was rewritten: the applied revision "
                f"{str(self.last_good)[:12]} is not an ancestor of {commit[:12]} (force push?)",
                hint="the last good revision stays applied; pass --allow-history-rewrite to accept the new history",
                transient=False,
            )
