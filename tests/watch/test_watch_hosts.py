"""Many machines, one repository: each machine's watcher applies its own slice only.

Two homes ("alpha" and "beta") follow one git repository with `--host`. A commit that changes
only alpha's slice (its bot, a section only it uses, a peer only it registers) is applied on alpha,
while beta reports `in-sync` at the new revision and its home stays byte-identical: same bytes,
same modes, not even rewritten (same inode and mtime). Only the reconciler's own status file and
its git clone cache change there. An install-wide change reaches both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.watch.harness import git, read_status, title

# What a watcher rewrites on every run whatever the manifests say: its status file (and the temp file
# of its atomic write) and its clone.
# The reconciler's own bookkeeping: its status, its clones, and the observation cache, which a pass
# rewrites when it had to read a file again (a file written within the cache's racy window).
OWN_FILES = (".hermes-fleet/watch-status.json", ".hermes-fleet/git", ".hermes-fleet/cache/observed.json")
OWN_TEMP = ".hermes-fleet/.watch-status.json."


def snapshot(home: Path) -> dict[str, tuple[Any, ...]]:
    """Every file, folder and link under the home: mode, bytes, inode and mtime (a rewrite shows)."""
    out: dict[str, tuple[Any, ...]] = {}
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home).as_posix()
        if rel.startswith(OWN_TEMP) or any(rel == own or rel.startswith(own + "/") for own in OWN_FILES):
            continue
        info = path.lstat()
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir", info.st_mode)
        else:
            out[rel] = ("file", info.st_mode, path.read_bytes(), info.st_ino, info.st_mtime_ns)
    return out


def fleet(*, alpha_title: str, alpha_section: bool = False, alpha_peer: bool = False, timezone: str = "UTC") -> dict[str, Any]:
    bots: list[dict[str, Any]] = [
        {"name": "a1", "host": "alpha", "title": alpha_title},
        {"name": "b1", "host": "beta", "title": "Beta One", "section": "Beta"},
        {"name": "shared", "title": "On every machine"},
    ]
    sections = [{"name": "Beta"}]
    if alpha_section:
        bots[0]["section"] = "Alpha"
        sections.append({"name": "Alpha"})
    spec: dict[str, Any] = {"sections": sections, "bots": bots, "config": {"timezone": timezone}}
    if alpha_peer:
        spec["peers"] = [{"name": "betabox", "url": "http://beta.lan:8642", "host": "alpha", "key": {"from_env": "BETA_KEY"}}]
    return {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "acme"}, "spec": spec}


class Repo:
    def __init__(self, base: Path) -> None:
        self.bare = base / "fleet.git"
        self.work = base / "work"
        git(base, "init", "--bare", "--initial-branch=main", str(self.bare))
        git(base, "init", "--initial-branch=main", str(self.work))
        for key, value in (("user.name", "Fleet Tester"), ("user.email", "t@example.invalid"), ("commit.gpgsign", "false")):
            git(self.work, "config", key, value)
        git(self.work, "remote", "add", "origin", str(self.bare))
        self.url = self.bare.as_uri()

    def push(self, doc: dict[str, Any], message: str) -> str:
        path = self.work / "fleet" / "fleet.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD")


@pytest.mark.slow
def test_a_change_to_one_machines_slice_leaves_the_other_home_byte_identical(spawn, tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    first = repo.push(fleet(alpha_title="Alpha One"), "first")
    homes = {host: tmp_path / f"home-{host}" for host in ("alpha", "beta")}
    env = {"BETA_KEY": "k" * 32}
    watches = {
        host: spawn(
            "--git", repo.url, "--ref", "main", "--path", "fleet", "--home", home, "--host", host, "--interval", "1", **env
        )
        for host, home in homes.items()
    }
    for watch in watches.values():
        run = watch.wait_for("reconciled", trigger="start", timeout=30)
        assert run["result"] == "applied" and run["revision"] == first, watch.transcript()
    assert (homes["alpha"] / "profiles" / "a1").is_dir() and not (homes["alpha"] / "profiles" / "b1").exists()
    assert (homes["beta"] / "profiles" / "b1").is_dir() and not (homes["beta"] / "profiles" / "a1").exists()
    beta_before = snapshot(homes["beta"])
    beta_digest = read_status(homes["beta"], lambda s: s["last_result"] in ("applied", "in-sync"))["runs"][-1]["digest"]

    # Alpha's bot, a section only alpha uses, and a peer only alpha registers: none is beta's.
    second = repo.push(fleet(alpha_title="Alpha Renamed", alpha_section=True, alpha_peer=True), "alpha only")
    at_second = {
        host: watch.wait_until(
            lambda e: e["event"] == "reconciled" and e["revision"] == second, timeout=20, what="a run at the new commit"
        )
        for host, watch in watches.items()
    }
    assert at_second["alpha"]["result"] == "applied", watches["alpha"].transcript()
    assert title(homes["alpha"], "a1") == "Alpha Renamed"
    assert "bot_peers" in (homes["alpha"] / "config.yaml").read_text()
    assert at_second["beta"]["result"] == "in-sync" and at_second["beta"]["changed"] == 0, watches["beta"].transcript()
    status = read_status(homes["beta"], lambda s: s["last_revision"] == second)
    assert snapshot(homes["beta"]) == beta_before, "beta's home changed for a commit that was not about it"
    assert status["runs"][-1]["digest"] == beta_digest, "beta's slice digest did not move"

    # An install-wide setting is part of every slice: both apply it.
    third = repo.push(fleet(alpha_title="Alpha Renamed", alpha_section=True, alpha_peer=True, timezone="Europe/Berlin"), "tz")
    for host, watch in watches.items():
        run = watch.wait_until(
            lambda e: e["event"] == "reconciled" and e["revision"] == third, timeout=20, what="a run at the tz commit"
        )
        assert run["result"] == "applied", watch.transcript()
        assert "Europe/Berlin" in (homes[host] / "profiles" / "shared" / "config.yaml").read_text(), host
    for watch in watches.values():
        assert watch.stop() == 0


def test_a_watcher_pinned_to_an_older_commit_rolls_back_instead_of_stalling(spawn, tmp_path: Path) -> None:
    """A rollout pins each watcher to a commit id (--ref <sha>); a rollback pins an older one. That is
    a choice, not a force push: the watcher applies it. A branch ref still refuses a rewrite."""
    repo = Repo(tmp_path)
    old = repo.push(fleet(alpha_title="Old"), "old")
    new = repo.push(fleet(alpha_title="New"), "new")
    home = tmp_path / "home-alpha"
    base = ("--git", repo.url, "--path", "fleet", "--home", home, "--host", "alpha", "--interval", "300")
    watch = spawn(*base, "--ref", new)
    assert watch.wait_for("reconciled", trigger="start", timeout=30)["result"] == "applied", watch.transcript()
    assert watch.stop() == 0 and title(home, "a1") == "New"
    back = spawn(*base, "--ref", old)
    run = back.wait_for("reconciled", trigger="start", timeout=30)
    assert run["result"] == "applied" and run["revision"] == old, back.transcript()
    assert back.stop() == 0 and title(home, "a1") == "Old"
    # Following the branch again from the old commit is a move forward; a branch moved back is not.
    forward = spawn(*base, "--ref", "main")
    assert forward.wait_for("reconciled", trigger="start", timeout=30)["result"] == "applied"
    assert forward.stop() == 0 and title(home, "a1") == "New"
    git(repo.work, "push", "-q", "--force", "origin", f"{old}:main")
    rewound = spawn(*base, "--ref", "main")
    stalled = rewound.wait_for("reconciled", trigger="start", timeout=30)
    assert stalled["result"] == "stalled" and "rewritten" in stalled["message"], rewound.transcript()
    assert rewound.stop() == 0 and title(home, "a1") == "New"
