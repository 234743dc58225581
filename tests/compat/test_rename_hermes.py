"""A renamed bot as the real hermes-agent 0.19.0 sees it (docs/hermes/rename.md).

Hermes itself writes what the bot learned before the rename: a memory through its MemoryStore, a
titled session through SessionDB, a job through `hermes cron create`. After `apply` renames the bot
(`renamed_from`), `hermes -p <new>` finds all of it, `hermes cron list` shows the routines with
their old ids under their new names, a routine still runs, and `hermes -p <old>` is gone.

0.19's `hermes cron ...` exits 0 even on failure, so every check reads the output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_routines_hermes import listed
from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply, assert_converged, profile, write_fleet

pytestmark = pytest.mark.hermes

ROUTINES = [
    {"name": "Digest", "schedule": "30 7 * * *", "prompt": "Summarize the news"},
    {"name": "Sweep", "schedule": "every 2h", "script": "hello.sh", "no_agent": True},
]
REMEMBER = "The user drinks green tea and wants answers under five lines."
SEE_MEMORY = (
    "import json\n"
    "from tools.memory_tool import MemoryStore\n"
    "s = MemoryStore(); s.load_from_disk(); print(json.dumps(s.memory_entries))\n"
)
SEE_SESSIONS = (
    "import json\n"
    "from hermes_state import SessionDB\n"
    "from hermes_cli.main import _resolve_session_by_name_or_id as resolve\n"
    "db = SessionDB()\n"
    "print(json.dumps({t: resolve(t) for t in ('Bot Chat', 'Tea talk')}))\n"
)


def bot(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "title": "Alpha", "routines": ROUTINES, **more}


def test_hermes_sees_the_renamed_bots_memories_sessions_and_routines(hermes: HermesCLI, hermes_root: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("NO_COLOR", "1")
    first = apply(write_fleet(tmp_path / "v1", [bot("alpha")]), hermes_root)
    assert first.code == 0, first.text
    # What the bot learned, written by Hermes' own code under HERMES_HOME=profiles/alpha.
    hermes.python(
        "from tools.memory_tool import MemoryStore\n"
        f"s = MemoryStore(); s.load_from_disk(); r = s.add('memory', {REMEMBER!r}); assert r.get('success'), r\n",
        profile="alpha",
    )
    hermes.python(
        "from hermes_state import SessionDB\n"
        "db = SessionDB(); db.create_session('20260101_000000_abcdef', 'cli')\n"
        "db.set_session_title('20260101_000000_abcdef', 'Tea talk')\n",
        profile="alpha",
    )
    out = hermes.run("cron", "create", "every 6h", "check the backups", "--name", "hand made", profile="alpha").stdout
    assert "Created job" in out or "hand made" in out, out
    before = listed(hermes, "alpha")
    ids = {v["Name"]: k for k, v in before.items()}
    assert {"[bot:alpha] Digest", "[bot:alpha] Sweep", "hand made"} <= set(ids)
    chat_before = json.loads(hermes.python(SEE_SESSIONS, profile="alpha").stdout)

    renamed = write_fleet(tmp_path / "v2", [bot("scout", renamed_from="alpha")])
    run = apply(renamed, hermes_root)
    assert run.code == 0, run.text
    assert_converged(renamed, hermes_root)

    # `hermes profile list` knows only the new name; `hermes -p alpha` no longer resolves.
    profiles = hermes.run("profile", "list").stdout
    assert "scout" in profiles and "alpha" not in profiles, profiles
    gone = hermes.run("cron", "list", profile="alpha", check=False)
    assert gone.returncode != 0 and "does not exist" in gone.stdout + gone.stderr, gone

    # Memories and sessions, as `hermes -p scout` loads them.
    assert json.loads(hermes.python(SEE_MEMORY, profile="scout").stdout) == [REMEMBER]
    chat_after = json.loads(hermes.python(SEE_SESSIONS, profile="scout").stdout)
    assert chat_after == chat_before and chat_after["Tea talk"] == "20260101_000000_abcdef" and chat_after["Bot Chat"]

    # Routines: the same ids, the new names; the hand-made job is there too.
    after = listed(hermes, "scout")
    assert set(after) == set(before)
    assert after[ids["[bot:alpha] Digest"]]["Name"] == "[bot:scout] Digest"
    assert after[ids["[bot:alpha] Sweep"]]["Name"] == "[bot:scout] Sweep"
    assert after[ids["hand made"]]["Name"] == "hand made"
    digest = next(j for j in json.loads((profile(hermes_root, "scout") / "cron" / "jobs.json").read_text())["jobs"]
                  if j["id"] == ids["[bot:alpha] Digest"])  # fmt: skip
    assert digest["prompt"] == "Summarize the news"  # the instruction itself: no profile named in it

    # A routine still runs, from the new profile, into its old output folder.
    scripts = profile(hermes_root, "scout") / "scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "hello.sh").write_text("#!/bin/sh\necho hello-after-rename\n", encoding="utf-8")
    (scripts / "hello.sh").chmod(0o755)
    sweep = ids["[bot:alpha] Sweep"]
    out = hermes.run("cron", "run", sweep, profile="scout").stdout
    assert "succeeded" in out, out
    output = profile(hermes_root, "scout") / "cron" / "output" / sweep
    assert "hello-after-rename" in "".join(p.read_text(encoding="utf-8") for p in output.iterdir())
    assert_converged(renamed, hermes_root)
