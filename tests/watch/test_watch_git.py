"""The reconciler on a git repository: a local bare repo, commits pushed with the git CLI.

Clone into the home's cache, exact-commit checkout, the revision in the log and the status file,
a push converging at the next fetch, an unreachable remote (last good revision stays applied), a
force push reported and not applied unless --allow-history-rewrite, and --ssh-key reaching ssh.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from controller.adapters.sources import GitSource, SourceError
from tests.watch.harness import git, read_status, title, write_fleet


class Remote:
    """A bare repository and a working clone that commits and pushes to it."""

    def __init__(self, base: Path) -> None:
        self.bare = base / "fleet.git"
        self.work = base / "work"
        git(base, "init", "--bare", "--initial-branch=main", str(self.bare))
        git(base, "init", "--initial-branch=main", str(self.work))
        git(self.work, "config", "user.name", "Fleet Tester")
        git(self.work, "config", "user.email", "tester@example.invalid")
        git(self.work, "config", "commit.gpgsign", "false")
        git(self.work, "remote", "add", "origin", str(self.bare))
        self.url = self.bare.as_uri()

    def commit(self, bots: list[dict[str, object]], message: str, *, amend: bool = False) -> str:
        write_fleet(self.work / "fleet" / "fleet.yaml", bots)
        (self.work / "README.md").write_text("not a manifest; outside --path\n")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message, *(["--amend"] if amend else []))
        return git(self.work, "rev-parse", "HEAD")

    def push(self, *, force: bool = False) -> None:
        git(self.work, "push", "-q", *(["--force"] if force else []), "origin", "main")


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


def _watch_git(spawn, remote: Remote, home: Path, *extra: str):
    return spawn("--git", remote.url, "--ref", "main", "--path", "fleet", "--home", home, "--interval", "1", *extra)


def test_clone_into_the_home_exact_commit_and_a_push_converges_at_the_next_fetch(spawn, remote: Remote, home: Path) -> None:
    first = remote.commit([{"name": "alpha", "title": "First"}], "first")
    remote.push()
    watch = _watch_git(spawn, remote, home)
    run = watch.wait_for("reconciled", trigger="start")
    assert run["result"] == "applied" and run["revision"] == first, watch.transcript()
    assert title(home, "alpha") == "First"

    cache = home / ".hermes-fleet" / "git" / hashlib.sha256(remote.url.encode()).hexdigest()[:16]
    assert (cache / ".git").is_dir(), "the clone lives in the home's cache"
    assert git(cache, "rev-parse", "HEAD") == first
    assert git(cache, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD", "a detached checkout of the exact commit"
    assert read_status(home, lambda s: s["last_revision"] == first)["last_result"] == "applied"

    second = remote.commit([{"name": "alpha", "title": "Second"}, {"name": "beta"}], "second")
    remote.push()
    run = watch.wait_until(
        lambda e: e["event"] == "reconciled" and e["revision"] == second, timeout=10, what="a run at the pushed commit"
    )
    assert run["trigger"] == "interval" and run["result"] == "applied" and run["changed"] == 2, watch.transcript()
    assert title(home, "alpha") == "Second" and (home / "profiles" / "beta").is_dir()
    assert git(cache, "rev-parse", "HEAD") == second
    assert watch.wait_for("reconciled")["result"] == "in-sync"
    status = read_status(home, lambda s: s["last_result"] == "in-sync")
    assert status["last_revision"] == second and status["last_good_revision"] == second
    assert status["source"] == remote.url
    assert watch.stop() == 0


def test_an_unreachable_remote_is_reported_and_the_last_good_revision_stays(
    spawn, remote: Remote, home: Path, tmp_path: Path
) -> None:
    good = remote.commit([{"name": "alpha", "title": "Good"}], "good")
    remote.push()
    watch = _watch_git(spawn, remote, home)
    watch.wait_for("reconciled", trigger="start", result="applied")

    moved = tmp_path / "elsewhere.git"
    remote.bare.rename(moved)  # the server is gone
    failed = watch.wait_until(lambda e: e["event"] == "reconciled" and e["result"] == "source-error", what="a source-error run")
    assert "fatal:" in failed["message"] and remote.url in failed["message"], failed["message"]
    assert title(home, "alpha") == "Good"
    status = read_status(home, lambda s: s["last_result"] == "source-error")
    assert status["last_good_revision"] == good and "fatal:" in status["message"]
    retry = watch.wait_for("reconciled")
    assert retry["trigger"] == "retry" and retry["result"] == "source-error"

    moved.rename(remote.bare)
    back = watch.wait_until(
        lambda e: e["event"] == "reconciled" and e["result"] != "source-error", what="recovery once the remote is back"
    )
    assert back["result"] == "in-sync" and back["revision"] == good, watch.transcript()
    assert watch.stop() == 0


def test_a_force_push_is_reported_and_not_applied(spawn, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha", "title": "Base"}], "base")
    applied = remote.commit([{"name": "alpha", "title": "Applied"}], "applied")
    remote.push()
    watch = _watch_git(spawn, remote, home, "--health-port", "0")
    watch.wait_for("reconciled", trigger="start", result="applied")

    rewritten = remote.commit([{"name": "alpha", "title": "Rewritten"}], "rewritten", amend=True)
    remote.push(force=True)
    refused = watch.wait_until(lambda e: e["event"] == "reconciled" and e["result"] != "in-sync", what="the force push noticed")
    assert refused["result"] == "stalled" and "rewritten" in refused["message"], watch.transcript()
    assert applied[:12] in refused["message"] and rewritten[:12] in refused["message"]
    assert watch.wait_for("reconciled")["result"] == "stalled"  # and it stays refused
    assert title(home, "alpha") == "Applied"
    status = read_status(home, lambda s: s["last_result"] == "stalled")
    assert status["last_good_revision"] == applied and "rewritten" in status["message"]
    assert watch.stop() == 0


def test_a_force_push_made_while_the_reconciler_was_down_is_still_refused(spawn, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha", "title": "Base"}], "base")
    applied = remote.commit([{"name": "alpha", "title": "Applied"}], "applied")
    remote.push()
    first = _watch_git(spawn, remote, home)
    first.wait_for("reconciled", trigger="start", result="applied")
    assert first.stop() == 0

    remote.commit([{"name": "alpha", "title": "Rewritten"}], "rewritten", amend=True)
    remote.push(force=True)
    second = _watch_git(spawn, remote, home)
    refused = second.wait_for("reconciled", trigger="start")
    assert refused["result"] == "stalled" and "rewritten" in refused["message"], second.transcript()
    assert applied[:12] in refused["message"]
    assert title(home, "alpha") == "Applied"
    assert second.stop() == 0


def test_allow_history_rewrite_applies_a_force_push(spawn, remote: Remote, home: Path) -> None:
    remote.commit([{"name": "alpha", "title": "Base"}], "base")
    remote.commit([{"name": "alpha", "title": "Applied"}], "applied")
    remote.push()
    watch = _watch_git(spawn, remote, home, "--allow-history-rewrite")
    watch.wait_for("reconciled", trigger="start", result="applied")
    rewritten = remote.commit([{"name": "alpha", "title": "Rewritten"}], "rewritten", amend=True)
    remote.push(force=True)
    run = watch.wait_until(
        lambda e: e["event"] == "reconciled" and e["revision"] == rewritten, what="the rewritten commit applied"
    )
    assert run["result"] == "applied", watch.transcript()
    assert title(home, "alpha") == "Rewritten"
    assert watch.stop() == 0


def test_a_missing_path_or_ref_stalls(user: Path, remote: Remote, home: Path) -> None:
    from tests.watch.harness import cli

    remote.commit([{"name": "alpha"}], "one")
    remote.push()
    no_path = cli(user, "watch", "--once", "--git", remote.url, "--path", "nope", "--home", home)
    assert no_path.returncode == 2 and "'nope' does not exist" in no_path.stdout, no_path.stdout + no_path.stderr
    no_ref = cli(user, "watch", "--once", "--git", remote.url, "--ref", "nope", "--path", "fleet", "--home", home)
    assert no_ref.returncode == 2 and "ref 'nope' not found" in no_ref.stdout, no_ref.stdout + no_ref.stderr
    assert not (home / "profiles").exists()


# --- --ssh-key, unit level: a stand-in `ssh` on PATH records how git calls it ------------------------


def _fake_ssh(folder: Path) -> Path:
    folder.mkdir()
    record = folder / "calls.txt"
    script = folder / "ssh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{record}"\necho "fake ssh: refused" >&2\nexit 255\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return record


@pytest.mark.parametrize("key_name", ["id_ed25519", "my keys/id ed25519"])
def test_ssh_key_sets_git_ssh_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_name: str) -> None:
    record = _fake_ssh(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    key = tmp_path / key_name
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text("not a real key\n")
    source = GitSource(
        "ssh://git@git.example.invalid/fleet.git", ref="main", path=".", cache_root=tmp_path / "cache", ssh_key=str(key)
    )
    with pytest.raises(SourceError) as caught:
        source.snapshot()
    assert caught.value.transient, "an unreachable remote is retried"
    args = record.read_text().splitlines()
    assert args[:2] == ["-i", str(key)], args  # one argument, even with spaces in the path
    assert "IdentitiesOnly=yes" in args and "BatchMode=yes" in args
    assert "git@git.example.invalid" in args


def test_without_ssh_key_git_uses_the_users_own_ssh_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _fake_ssh(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    monkeypatch.delenv("GIT_SSH", raising=False)
    source = GitSource("ssh://git@git.example.invalid/fleet.git", ref="main", path=".", cache_root=tmp_path / "cache")
    with pytest.raises(SourceError):
        source.snapshot()
    args = record.read_text().splitlines()
    assert "-i" not in args and "git@git.example.invalid" in args
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def test_each_applying_run_is_a_history_entry_with_its_commit(user: Path, remote: Remote, home: Path) -> None:
    """watch --git --once records the commit it applied; an in-sync run records nothing; rollback
    goes back to the earlier commit's manifests."""
    import json

    from tests.watch.harness import cli

    once = ("watch", "--git", remote.url, "--ref", "main", "--path", "fleet", "--home", home, "--once")
    first = remote.commit([{"name": "alpha", "title": "First"}], "first")
    remote.push()
    assert cli(user, *once).returncode == 0
    assert cli(user, *once).returncode == 0  # in sync: no entry
    second = remote.commit([{"name": "alpha", "title": "Second"}, {"name": "beta"}], "second")
    remote.push()
    done = cli(user, *once)
    assert done.returncode == 0, done.stderr
    listed = cli(user, "history", "--home", home, "-o", "json")
    entries = json.loads(listed.stdout)["entries"]
    assert [(e["seq"], e["command"], e["source"]["revision"]) for e in entries] == [(1, "watch", first), (2, "watch", second)]
    assert entries[1]["counts"] == {"created": 1, "changed": 1, "deleted": 0, "failed": 0}
    back = cli(user, "rollback", "--home", home, "--yes")
    assert back.returncode == 0, back.stdout + back.stderr
    assert title(home, "alpha") == "First" and not (home / "profiles" / "beta").exists()
    shown = json.loads(cli(user, "history", "show", "3", "--home", home, "-o", "json").stdout)["entry"]
    assert shown["command"] == "rollback" and shown["source"]["rollback_of"] == 1 and shown["source"]["revision"] == first


def test_an_encrypted_secrets_file_under_path_is_read_by_sops_not_as_a_manifest(
    user: Path, remote: Remote, home: Path, tmp_path: Path
) -> None:
    """The documented SOPS layout (docs/manifest.md#from_command) in a repository: `fleet/secrets.enc.yaml`
    beside the manifests. The reconciler applies the commit; the bot's value came from real sops."""
    from tests.tools import require_tool
    from tests.watch.harness import cli

    sops, keygen = require_tool("sops"), require_tool("age-keygen")
    key = tmp_path / "age.key"
    subprocess.run([keygen, "-o", str(key)], check=True, capture_output=True, timeout=30)
    recipient = next(line.split(": ", 1)[1] for line in key.read_text().splitlines() if line.startswith("# public key: "))
    plain = tmp_path / "secrets.yaml"
    plain.write_text("anthropic: sk-ant-from-sops-0123456789\n")
    encrypted = subprocess.run(
        [sops, "--disable-version-check", "--encrypt", "--age", recipient, str(plain)],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    (remote.work / "fleet").mkdir(parents=True)
    (remote.work / "fleet" / "secrets.enc.yaml").write_text(encrypted)
    ref = {"from_command": [sops, "--disable-version-check", "-d", "--extract", '["anthropic"]', "secrets.enc.yaml"]}
    remote.commit([{"name": "alpha", "env": {"ANTHROPIC_API_KEY": ref}}], "with sops")
    remote.push()
    run = cli(user, "watch", "--once", "--git", remote.url, "--path", "fleet", "--home", home, SOPS_AGE_KEY_FILE=str(key))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ANTHROPIC_API_KEY=sk-ant-from-sops-0123456789" in (home / "profiles" / "alpha" / ".env").read_text()
    assert "sk-ant-from-sops" not in run.stdout + run.stderr
