"""Where the reconciler reads manifests from: local paths, or a git repository.

A source hands out `Snapshot`s: the manifest files to load and a revision (a content digest for
local files, the exact commit for git). `GitSource` keeps a clone under the home
(`.hermes-fleet/git/`), fetches, and checks out the exact commit; an unreachable remote or a
rewritten history is reported as a `SourceError` and the last good revision stays applied.
Called by watching.py; the only module that imports GitPython.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import SourceError


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
                digest.update(Path(file).read_bytes())
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

    def _env(self) -> dict[str, str]:
        env = {"GIT_TERMINAL_PROMPT": "0"}  # a password prompt would hang a headless reconciler
        if self.ssh_key:
            env["GIT_SSH_COMMAND"] = f"ssh -i {shlex.quote(self.ssh_key)} -o IdentitiesOnly=yes -o BatchMode=yes"
        return env

    def _repo(self) -> Any:
        import git

        if (self.checkout / ".git").is_dir():
            return git.Repo(self.checkout)
        self.checkout.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return git.Repo.clone_from(self.url, self.checkout, no_checkout=True, env=self._env())

    def snapshot(self, *, allow_rewrite: bool = False) -> Snapshot:
        import git

        try:
            repo = self._repo()
            with repo.git.custom_environment(**self._env()):
                repo.remotes.origin.fetch(prune=True, force=True, tags=True)
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
                f"git {self.url} ({self.ref}): {detail}",
                hint="check the URL, the ref and the credentials; the last good revision stays applied",
            ) from None
        folder = self.checkout / self.subpath
        if not folder.exists():
            raise SourceError(
                f"{self.subpath!r} does not exist in {self.url} at {commit[:12]}", hint="check --path", transient=False
            )
        return Snapshot([str(folder)], True, commit, f"git {self.url}@{self.ref}")

    def _resolve(self, repo) -> str:  # type: ignore[no-untyped-def]
        import git

        for candidate in (f"origin/{self.ref}", f"refs/tags/{self.ref}", self.ref):
            try:
                return str(repo.git.rev_parse("--verify", "--quiet", f"{candidate}^{{commit}}"))
            except git.GitCommandError:
                continue
        raise SourceError(f"ref {self.ref!r} not found in {self.url}", hint="check --ref", transient=False)

    def _check_history(self, repo, commit: str) -> None:  # type: ignore[no-untyped-def]
        if not repo.is_ancestor(self.last_good, commit):
            raise SourceError(
                f"the history of {self.url} ({self.ref}) was rewritten: the applied revision "
                f"{str(self.last_good)[:12]} is not an ancestor of {commit[:12]} (force push?)",
                hint="the last good revision stays applied; pass --allow-history-rewrite to accept the new history",
                transient=False,
            )
