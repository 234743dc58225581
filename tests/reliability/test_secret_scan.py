"""Secrets: every output format and every file of a full run is scanned for the secret values used.

A full run of the realistic fleet: validate (text, json), plan (text, json), apply --dry-run (text,
json), the first apply (text, --adopt), an update that rotates the OpenRouter key (apply -o json),
a failing apply (a full disk mid-run: the error path), status (text, json), export — stdout and
stderr of each. Then every file under the home. A secret may appear only in the `.env` files that
are meant to hold it: `profiles/alpha/.env` (OPENROUTER_API_KEY) and the root `.env` (the peer key).
"""

from __future__ import annotations

import errno
import fnmatch
import os
from pathlib import Path

import pytest

from controller.adapters import fsio
from tests.integration.helpers import hermes_fleet
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes]

# Where each secret may be: the peer key is install-wide, so it is in the root's .env and in every
# bot's own .env (a bot reads only its own profile), and in the backup of a pruned bot's profile.
INTENDED = {
    ".env": {scenario.SECRET_PEER},
    "profiles/*/.env": {scenario.SECRET_PEER},
    ".hermes-fleet/backups/*/profile/.env": {scenario.SECRET_PEER},
    "profiles/alpha/.env": {scenario.SECRET_PEER, scenario.SECRET_OR_V1, scenario.SECRET_OR_V2},
}


def intended(rel: str) -> set[str]:
    return set().union(*(secrets for pattern, secrets in INTENDED.items() if fnmatch.fnmatchcase(rel, pattern)))


def test_secrets_appear_only_in_their_env_files(pristine: Pristine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    home = scenario.copy_home(pristine.base_root, tmp_path / "home")
    v1, v2 = pristine.v1, pristine.v2
    outputs: list[tuple[str, str]] = []

    def run(label: str, *args: str | Path, code: int | tuple[int, ...] = 0) -> None:
        done = hermes_fleet(*args)
        assert done.code in ((code,) if isinstance(code, int) else code), f"{label}: {done.text}"
        outputs.append((label, done.out + "\n" + done.err))

    run("validate", "validate", "-f", v1)
    run("validate json", "validate", "-f", v1, "-o", "json")
    run("plan", "plan", "-f", v1, "--home", home, "--adopt")
    run("plan json", "plan", "-f", v1, "--home", home, "--adopt", "-o", "json")
    run("dry-run", "apply", "-f", v1, "--home", home, "--adopt", "--dry-run")
    run("dry-run json", "apply", "-f", v1, "--home", home, "--adopt", "--dry-run", "-o", "json")
    run("apply", "apply", "-f", v1, "--home", home, "--adopt")
    run("status", "status", "--home", home)
    monkeypatch.setenv("OR_KEY", scenario.SECRET_OR_V2)  # rotate the key: the diff must still hide it
    run("plan rotated", "plan", "-f", v2, "--home", home, "--prune")
    run("plan rotated json", "plan", "-f", v2, "--home", home, "--prune", "-o", "json")
    calls = [0]

    def full(target: Path) -> None:
        calls[0] += 1
        if calls[0] == 2:  # alpha's .env, with the new key staged
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    fsio.WRITE_HOOKS.append(full)
    try:
        run("apply failing", "apply", "-f", v2, "--home", home, "--prune", code=1)
    finally:
        fsio.WRITE_HOOKS.remove(full)
    run("apply json", "apply", "-f", v2, "--home", home, "--prune", "-o", "json")
    run("status json", "status", "-f", v2, "--home", home, "-o", "json")
    run("status text", "status", "-f", v2, "--home", home)
    run("export", "export", "--home", home, "--fleet", scenario.FLEET, "--split", str(tmp_path / "export"))
    run("export stdout", "export", "--home", home, "--fleet", scenario.FLEET)

    assert scenario.SECRET_OR_V2 in (home / "profiles" / "alpha" / ".env").read_text(encoding="utf-8")
    for label, text in outputs:
        for secret in scenario.SECRETS:
            assert secret not in text, f"{label} printed a secret"
    scanned = 0
    for root in (home, tmp_path / "export"):
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if not path.is_file() or path.is_symlink():
                continue
            rel = str(path.relative_to(home)) if root == home else f"export/{path.relative_to(root)}"
            data = path.read_bytes()
            scanned += 1
            for secret in scenario.SECRETS:
                if secret.encode() in data:
                    assert secret in intended(rel), f"{rel} holds a secret"
    assert scanned > 30
