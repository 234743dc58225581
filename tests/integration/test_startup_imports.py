"""What a fresh `apply` and `plan` of a fleet without webhooks, rooms or a gateway load.

The start-up race (docs/performance.md#scale: `apply` of 10 bots against the shell loop of
`hermes profile create` + `hermes cron create`) is won or lost in the interpreter's start-up; the
gateway client, the webhook client, git and the file watcher are for runs that use them. A fresh
interpreter runs the real CLI on a temporary home and reports `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.helpers import write_fleet

REPO = Path(__file__).resolve().parents[2]
NOT_LOADED = {"httpx", "httpcore", "websockets", "git", "watchfiles", "asyncio", "ssl", "xml", "argcomplete"}
# Our own modules for runs that use them: the webhook client (and its threads) for apply --notify.
NOT_LOADED_OWN = {"controller.adapters.webhooks", "controller.engine.notifying", "controller.core.health"}
BOTS = [
    {
        "name": f"bot{i}",
        "title": f"Bot {i}",
        "model": {"provider": "openrouter", "default": "model-a"},
        "soul": "You are a bot.\n",
        "env": {"LABEL": str(i)},
        "routines": [
            {"name": "Digest", "schedule": f"{i} 8 * * 1-5", "prompt": "Summarize"},
            {"name": "Sweep", "schedule": "every 2h", "prompt": "Check"},
        ],
    }
    for i in range(3)
]


def loaded_by(*argv: str | Path) -> set[str]:
    """Every module a fresh interpreter holds after `hermes-fleet <argv>`."""
    code = (
        "import contextlib, gc, io, json, sys\n"
        "from controller import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = cli.main(sys.argv[1:])\n"
        "gc_state = [gc.isenabled(), gc.get_freeze_count()]\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules), 'gc': gc_state}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=REPO, capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["code"] == 0, done.stderr
    assert out["gc"] == [True, 0]  # the collector paused for the verb's import runs again, nothing left frozen
    return set(out["modules"])


def packages(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_apply_and_plan_of_a_plain_fleet_load_no_gateway_webhook_git_or_watcher_library(tmp_path: Path) -> None:
    manifest = write_fleet(tmp_path / "m", BOTS)
    home = tmp_path / "home"
    applied = loaded_by("apply", "-f", manifest, "--home", home)
    assert (home / "profiles" / "bot2" / "cron" / "jobs.json").is_file()  # it did apply
    assert packages(applied) & NOT_LOADED == set()
    assert applied & NOT_LOADED_OWN == set()
    planned = loaded_by("plan", "-f", manifest, "--home", home)
    assert packages(planned) & NOT_LOADED == set()
    assert planned & NOT_LOADED_OWN == set()
    assert {"pydantic", "croniter", "sqlite3"} <= packages(applied)  # the libraries this fleet does need
