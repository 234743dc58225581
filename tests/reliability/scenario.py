"""The realistic fleet the reliability tests break: builders for homes, manifests and snapshots.

A "pristine" home is what a user has after running the previous version of the fleet:

* a profile `legacy` made by the real `hermes profile create`, with a hand-made cron job made by
  the real `hermes cron create`, a hand-set description (`hermes profile describe --text`) and two
  foreign `ui_meta` namespaces (what Desktop or another tool keeps there), adopted by fleet v1;
* bots `alpha` (secret env, SOUL, avatar image, two routines), `beta` (model, config, a routine)
  and `delta`, the install-wide policy (timezone, gateway, a peer with a secret key) — fleet v1.

Fleet v2 changes nearly everything: titles, an avatar image, a secret, routines (changed, added,
removed with --prune), a new bot `gamma` (a profile created from scratch), `delta` pruned (moved to a
backup), install-wide timezone. Applying v2 to the pristine home is the "update run".

Fleet v3 is v1 with `alpha` renamed to `scout` (`renamed_from: alpha`): the "rename run" moves a
profile with a secret, a SOUL, an avatar, a Bot Chat and two routines.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.hermes_support import HermesCLI, hermes_bin
from tests.integration.helpers import tiny_png

FLEET = "acme"
SECRET_OR_V1 = "sk-or-RELIABILITY-v1-5d1e0a"
SECRET_OR_V2 = "sk-or-RELIABILITY-v2-77c3b9"
SECRET_PEER = "peer-RELIABILITY-key-0c9f41"
SECRETS = (SECRET_OR_V1, SECRET_OR_V2, SECRET_PEER)
REPO = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("crash_runner.py")

HAND_JOB = "hand made nightly"
FOREIGN_UI_META = {
    "desktop-notes": {"pinnedNote": "keep me", "revision": 3},
    "acme-tool": {"color": "teal", "list": [1, 2, 3]},
}


def environ(user_home: Path, *, secret_or: str = SECRET_OR_V1) -> dict[str, str]:
    """The environment a hermes-fleet run gets: scratch HOME, the secrets in env variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HOME=str(user_home), NO_COLOR="1", OR_KEY=secret_or, PEER_KEY=SECRET_PEER, PYTHONPATH=str(REPO))
    return env


RENAMED = ("alpha", "scout")  # fleet v3: (old, new)


def manifests(folder: Path, version: int) -> Path:
    """Write fleet v1, v2 or v3 (one Fleet document plus its soul and avatar files); returns the yaml."""
    renamed = version == 3
    version = 1 if renamed else version
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "alpha-soul.md").write_text(f"You are Alpha, version {version}.\n", encoding="utf-8")
    (folder / "avatar.png").write_bytes(tiny_png((200, 30, 60) if version == 1 else (10, 120, 250)))
    alpha: dict[str, Any] = {
        "name": "alpha",
        "title": "Alpha" if version == 1 else "Alpha Prime",
        "description": "Reads papers.",
        "section": "Team",
        "soul_file": "alpha-soul.md",
        "avatar": {"image": "avatar.png"},
        "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "PLAIN_SETTING": f"v{version}"},
        "routines": [
            {"name": "Digest", "schedule": "0 9 * * 1-5" if version == 1 else "30 8 * * 1-5", "prompt": "Summarize the news"},
            {"name": "Sweep", "schedule": "every 30m", "script": "sweep.sh", "no_agent": True},
        ],
    }
    if renamed:
        alpha["name"], alpha["renamed_from"] = RENAMED[1], RENAMED[0]
    if version == 2:
        alpha["routines"].append({"name": "Weekly", "schedule": "0 10 * * 1", "prompt": "Plan the week"})
    beta: dict[str, Any] = {
        "name": "beta",
        "title": "Beta",
        "section": "Team",
        "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4" if version == 1 else "openai/gpt-5"},
        "config": {"approvals.mode": "smart"},
        "routines": [{"name": "Hold", "schedule": "every 1d", "prompt": "wait", "paused": True}] if version == 1 else [],
    }
    legacy: dict[str, Any] = {
        "name": "legacy",
        "title": "Legacy" if version == 1 else "Legacy Bot",
        "avatar": {"shape": "hexagon"},
        "routines": [{"name": "Nightly", "schedule": "0 2 * * *" if version == 1 else "0 3 * * *", "prompt": "Tidy up"}],
    }
    bots = [alpha, beta, legacy]
    if version == 1:
        bots.append({"name": "delta", "title": "Delta"})
    else:
        bots.append(
            {
                "name": "gamma",
                "title": "Gamma",
                "section": "Team",
                "env": {"GAMMA_MODE": "fast"},
                "routines": [{"name": "Ping", "schedule": "every 2h", "prompt": "Ping"}],
            }
        )
    doc = {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": FLEET},
        "spec": {
            "config": {"timezone": "Europe/Berlin" if version == 1 else "Asia/Kolkata"},
            "gateway": {"bot_loop_guard": {"enabled": True, "max_events": 4 if version == 1 else 6}},
            "sections": [{"name": "Team"}],
            "peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "PEER_KEY"}}],
            "bots": bots,
        },
    }
    path = folder / "fleet.yaml"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def run_cli(
    args: list[str | Path],
    env: dict[str, str],
    *,
    hook: str = "none",
    hook_at: int = 0,
    log: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`hermes-fleet <args>` in a subprocess, through crash_runner.py (which installs the hook)."""
    env = dict(env, HF_HOOK=hook, HF_HOOK_AT=str(hook_at), HF_HOOK_LOG=str(log or ""))
    return subprocess.run(
        [sys.executable, str(RUNNER), *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


def run_many(commands: list[list[str | Path]], env: dict[str, str], timeout: float = 120) -> list[dict[str, Any]]:
    """Several `hermes-fleet` runs in one subprocess (no hook): [{"code", "out", "err"}, ...]."""
    argv = json.dumps([[str(a) for a in c] for c in commands])
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--many", argv],
        env=dict(env, HF_HOOK="none"),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def make_legacy(cli: HermesCLI) -> None:
    """The pre-existing profile, made by real Hermes, plus foreign ui_meta namespaces."""
    cli.run("profile", "create", "legacy")
    cli.run("cron", "create", "every 6h", "check the backups", "--name", HAND_JOB, profile="legacy")
    cli.run("profile", "describe", "legacy", "--text", "A profile made by hand")
    path = cli.root / "profiles" / "legacy" / "profile.yaml"
    yaml = YAML()
    data = yaml.load(path.read_text(encoding="utf-8")) or {}
    data["ui_meta"] = dict(FOREIGN_UI_META)
    data["_ui_meta_revisions"] = {"desktop-notes": 3}
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)
    cli.run("config", "set", "display.compact", "true")  # a root config.yaml the fleet does not own


def hermes_cli(root: Path, scratch: Path) -> HermesCLI | None:
    binary = hermes_bin()
    return HermesCLI(binary, root, scratch) if binary else None


def copy_home(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


# --- snapshots and parsing -------------------------------------------------------------------------

VOLATILE_NAMES = ("jobs.json", "state.db", "apply.lock")  # timestamps, random ids, pids


def files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_file(path: Path) -> None:
    """Raise if a JSON / YAML / .env / SQLite file under the home does not parse."""
    name = path.name
    if name.endswith(".tmp") or ".staging-" in str(path):
        return
    data = path.read_bytes()
    if name.endswith(".json") or name == "apply.lock":
        if name == "apply.lock" and not data:
            return
        json.loads(data.decode("utf-8"))
    elif name.endswith((".yaml", ".yml")):
        YAML(typ="safe", pure=True).load(data.decode("utf-8"))
    elif name == ".env":
        from controller.adapters import envfile

        envfile.EnvFile.parse(data.decode("utf-8"))
    elif name.endswith(".db"):
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)  # ro alone would add -wal/-shm
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path
            conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
        finally:
            conn.close()


def leftovers(root: Path) -> list[str]:
    """Staging debris: fsio temp files and half-built profile folders."""
    found = []
    for path in root.rglob("*"):
        rel = str(path.relative_to(root))
        if ".staging-" in str(path.parent):
            continue  # inside a half-built profile folder: part of that one leftover
        if path.name.endswith(".tmp") and path.name.startswith("."):
            found.append(rel)
        elif ".staging-" in path.name and path.parent.name == "profiles":
            found.append(rel + "/")
    return sorted(found)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def ui_meta(root: Path, bot: str) -> dict[str, Any]:
    data = YAML(typ="safe", pure=True).load((root / "profiles" / bot / "profile.yaml").read_text(encoding="utf-8"))
    return data.get("ui_meta") or {}


def job_names(root: Path, bot: str) -> list[str]:
    path = root / "profiles" / bot / "cron" / "jobs.json"
    return [j.get("name") for j in json.loads(path.read_text(encoding="utf-8"))["jobs"]]


def job_ids(root: Path, bot: str) -> list[str]:
    path = root / "profiles" / bot / "cron" / "jobs.json"
    return sorted(j.get("id") for j in json.loads(path.read_text(encoding="utf-8"))["jobs"])


def add_rename_traces(root: Path) -> None:
    """What else names the profile fleet v3 renames (docs/hermes/rename.md): Honcho host blocks in
    the profile's and the root's honcho.json, the sticky active_profile, and a Desktop-made job."""
    old = RENAMED[0]
    (root / "profiles" / old / "honcho.json").write_text(
        json.dumps({"hosts": {f"hermes_{old}": {"workspace": "acme"}}}, indent=2) + "\n", encoding="utf-8"
    )
    (root / "honcho.json").write_text(
        json.dumps({"apiKey": "not-a-secret-here", "hosts": {f"hermes.{old}": {"aiPeer": old}, "hermes": {}}}) + "\n",
        encoding="utf-8",
    )
    (root / "active_profile").write_text(old + "\n", encoding="utf-8")
    store = root / "profiles" / old / "cron" / "jobs.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    data["jobs"].append({"id": "desk00000001", "name": f"[bot:{old}] From Desktop", "prompt": f"hermes -p {old} chat -q hi"})
    store.write_text(json.dumps(data, indent=2), encoding="utf-8")
