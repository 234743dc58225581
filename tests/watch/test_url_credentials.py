"""A credential in a git URL (`https://TOKEN@host/...`) reaches no output, log, status or state file.

The repository is served over git's dumb HTTP protocol by a local static file server, so the URL
carries a user-info part exactly as a token URL does. `watch --once --git URL` runs twice (a clone,
then a fetch), then against a path that does not exist (an error message quoting the URL), and
`status` (text and JSON) reads the status file. The token must appear in none of: stdout and stderr
of every run, any file under the home (the git cache's config, reflogs and FETCH_HEAD included).
"""

from __future__ import annotations

import functools
import gc
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.integration.helpers import all_text_under, hermes_fleet
from tests.watch.harness import git, write_fleet

TOKEN = "ghp-CREDENTIAL-in-the-url-7f3a9c"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A bare repository with one commit, served at http://oauth2:TOKEN@127.0.0.1:PORT/fleet.git."""
    work, bare = tmp_path / "work", tmp_path / "srv" / "fleet.git"
    git(tmp_path, "init", "-q", "--initial-branch=main", str(work))
    for key, value in (("user.name", "T"), ("user.email", "t@example.invalid"), ("commit.gpgsign", "false")):
        git(work, "config", key, value)
    write_fleet(work / "fleet" / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "first")
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-server-info")  # what the dumb HTTP protocol reads
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(bare.parent)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://oauth2:{TOKEN}@127.0.0.1:{server.server_address[1]}/fleet.git"
    finally:
        server.shutdown()
        server.server_close()
        gc.collect()  # a connection git dropped mid-reply is collected here, inside this test (see below)


# The standard library's threading HTTP server can leave the socket of a connection git reset in the
# middle of a reply unclosed (its reader is not closed when the handler fails), so a
# ResourceWarning about this test's own stand-in server (its address, never hermes-fleet's) fell at
# random into this test or a later one under load. The fixture collects it before the test ends,
# and the warning about that socket is not this test's subject.
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_token_in_the_git_url_is_never_shown_or_stored(served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path / "hermes"
    runs = [
        hermes_fleet("watch", "--once", "--git", served, "--path", "fleet", "--home", home, "--log-format", "json"),
        hermes_fleet("watch", "--once", "--git", served, "--path", "fleet", "--home", home),
        hermes_fleet("watch", "--once", "--git", served, "--path", "nope", "--home", home),
        hermes_fleet("watch", "--once", "--git", served.replace("fleet.git", "gone.git"), "--home", home),
        hermes_fleet("status", "--home", home),
        hermes_fleet("status", "--home", home, "-o", "json"),
    ]
    assert [r.code for r in runs] == [0, 0, 2, 1, 0, 0], [r.text for r in runs]
    assert (home / "profiles" / "alpha").is_dir(), "the clone worked: the URL itself was used as given"
    for run in runs:
        assert TOKEN not in run.text, run.text
    assert "does not exist" in runs[2].text and "***@" in runs[2].text
    status = json.loads(runs[5].out)["reconciler"]
    assert status["source"].startswith("http://***@127.0.0.1:")  # the source, named without its credential
    assert "source http://***@127.0.0.1:" in runs[4].out
    assert TOKEN not in all_text_under(home), "the token reached a file of the home (status, git cache...)"
