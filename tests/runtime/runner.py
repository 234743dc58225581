"""Run the real hermes-agent 0.19.0 under a bot, with its model on loopback and nothing outside.

`BotRunner` wraps `tests.hermes_support.HermesCLI` (scrubbed environment, throwaway HOME) and adds
what a running Hermes needs to stay on this machine (docs/hermes/runtime.md#model-calls):

- the model: each test fleet declares `env: {OPENROUTER_BASE_URL: <the recording server>}` on
  its bots, so a bot with `provider: openrouter` keeps its manifest and 0.19.0 sends its requests,
  with the bot's own `OPENROUTER_API_KEY`, there (`hermes_cli/runtime_provider.py:
  _resolve_openrouter_runtime`). It must be in the bot's `.env`, not the shell: a cron run reads
  provider variables from the profile's `.env` only (`cron/scheduler.py:run_one_job` installs
  `agent/secret_scope.py:build_profile_secret_scope`);
- the proxy variables = `OutsideGuard`, which refuses and records any other call;
- `HERMES_DISABLE_LAZY_INSTALLS=1` (`tools/lazy_deps.py:_allow_lazy_installs`): a default
  toolset would otherwise `pip install` a missing optional package into Hermes' own venv;
- `TIRITH_ENABLED=false` (`tools/tirith_security.py:_load_security_config`): the terminal
  scanner would otherwise try to download its binary from GitHub;
- three of Hermes' own caches, seeded fresh in each profile before a run, so it does not refetch
  them: `.update_check` (`hermes_cli/banner.py:check_for_updates`, 6 h, else PyPI),
  `cache/openrouter_model_metadata.json` (`agent/model_metadata.py:fetch_model_metadata`, 1 h,
  else openrouter.ai) and `models_dev_cache.json` (`agent/models_dev.py:fetch_models_dev`, 1 h,
  else models.dev). No file apply manages is touched.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.hermes_support import HERMES_VERSION, HermesCLI
from tests.runtime.model_server import ModelServer, Recorded
from tests.runtime.outside_guard import OutsideGuard

# Any entry makes the metadata cache count as present; models missing from it are looked up at
# the (loopback) endpoint and then defaulted, which is all a test run needs.
_MODELS_DEV_PLACEHOLDER = {"loopback": {"id": "loopback", "name": "Loopback", "env": [], "models": {}}}
_METADATA_PLACEHOLDER = {
    "loopback/placeholder": {"context_length": 128000, "max_completion_tokens": 4096, "name": "placeholder", "pricing": {}}
}


@dataclass
class Run:
    """One hermes process: what it printed and what reached the model meanwhile."""

    proc: subprocess.CompletedProcess[str]
    requests: list[Recorded]
    outside: list[str]

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr

    @property
    def first(self) -> Recorded:
        assert self.requests, f"hermes never called the model:\n{self.output[-3000:]}"
        return self.requests[0]


class BotRunner:
    def __init__(self, cli: HermesCLI, model: ModelServer, guard: OutsideGuard) -> None:
        self.cli = cli
        self.model = model
        self.guard = guard

    def env(self) -> dict[str, str]:
        env = self.cli.env(None)  # HERMES_HOME = the root; `-p <bot>` selects the profile
        env.update(self.guard.env())
        env.update(TIRITH_ENABLED="false", HERMES_DISABLE_LAZY_INSTALLS="1")
        return env

    def profile(self, bot: str) -> Path:
        return self.cli.root if bot == "default" else self.cli.root / "profiles" / bot

    def seed_caches(self, bot: str) -> None:
        home = self.profile(bot)
        stamp = {"ts": time.time(), "behind": 0, "rev": None, "ver": HERMES_VERSION}
        (home / ".update_check").write_text(json.dumps(stamp))
        (home / "cache").mkdir(exist_ok=True)
        (home / "cache" / "openrouter_model_metadata.json").write_text(json.dumps(_METADATA_PLACEHOLDER))
        (home / "models_dev_cache.json").write_text(json.dumps(_MODELS_DEV_PLACEHOLDER))

    def hermes(self, bot: str, *args: str, timeout: float = 240) -> Run:
        """`hermes -p <bot> <args>`; the model traffic and outside attempts of this process only."""
        self.seed_caches(bot)
        self.model.drain()
        self.guard.drain()
        argv = [str(self.cli.binary), "-p", bot, *args]
        proc = subprocess.run(
            argv, env=self.env(), cwd=self.cli.userhome, input="", capture_output=True, text=True, timeout=timeout
        )
        return Run(proc, self.model.drain(), self.guard.drain())

    def turn(self, bot: str, query: str) -> Run:
        """One non-interactive agent turn: `chat -q` runs a single query, `-Q` prints only the answer."""
        run = self.hermes(bot, "chat", "-Q", "-q", query)
        assert run.proc.returncode == 0, run.output[-3000:]
        return run

    def probe(self, bot: str, code: str, *args: str) -> object:
        """Run `code` (with `args`) in Hermes' venv under the bot's HERMES_HOME; it prints one JSON value last."""
        env = {**self.env(), "HERMES_HOME": str(self.profile(bot))}
        argv = [str(self.cli.python_bin), "-c", code, *args]
        proc = subprocess.run(argv, env=env, cwd=self.cli.userhome, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
