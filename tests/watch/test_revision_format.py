"""One revision format (docs/watch.md#revisions): the watch log, the status file, `status` and
/metrics all show the revision in full, as the source names it: `sha256:` and 16 hex digits for
local files, the 40-hex commit id for git. Real reconcilers, a real git remote, real scrapes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.watch.harness import cli, http_get, read_status, samples, write_fleet
from tests.watch.test_watch_git import Remote, _watch_git


def _metrics_revision(port: int) -> str:
    found = [
        dict(labels)["revision"]
        for (name, labels) in samples(http_get(port, "/metrics")[2])
        if name == "hermes_fleet_revision_info"
    ]
    assert len(found) == 1, found
    return found[0]


def _everywhere(watch, user: Path, home: Path, port: int) -> set[str]:
    """The revision of the last pass as the log, the status file, `status` and /metrics show it."""
    logged = watch.wait_for("reconciled", timeout=30, result="in-sync")["revision"]
    status = read_status(home, lambda s: s["last_result"] == "in-sync")
    text = cli(user, "status", "--home", home).stdout
    shown = re.search(r"last run: in-sync at revision (\S+)", text)
    good = re.search(r"last good revision: (\S+);", text)
    assert shown and good, text
    return {logged, status["last_revision"], status["last_good_revision"], shown.group(1), good.group(1), _metrics_revision(port)}


def test_a_local_source_shows_one_revision_everywhere(spawn, user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.3", "--health-port", "0")
    port = int(watch.wait_for("health_listening")["address"].rsplit(":", 1)[1])
    (revision,) = _everywhere(watch, user, home, port)
    assert re.fullmatch(r"sha256:[0-9a-f]{16}", revision), revision
    assert watch.stop() == 0


def test_a_git_source_shows_the_full_commit_everywhere(spawn, user: Path, tmp_path: Path, home: Path) -> None:
    remote = Remote(tmp_path)
    commit = remote.commit([{"name": "alpha", "title": "Alpha"}], "first")
    remote.push()
    watch = _watch_git(spawn, remote, home, "--health-port", "0")
    port = int(watch.wait_for("health_listening")["address"].rsplit(":", 1)[1])
    assert _everywhere(watch, user, home, port) == {commit}
    assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert watch.stop() == 0
