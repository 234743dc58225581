"""Run the real hermes-agent 0.19.0 CLI against a throwaway Hermes root, for compat tests.

`.ci/install-hermes` installs the binary; `tests/conftest.py` builds a `HermesCLI` per test. The
environment is scrubbed so the real user's ~/.hermes, proxies and colours never leak in.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HERMES_VERSION = "0.19.0"
INSTALL_HINT = "run .ci/install-hermes and export HERMES_FLEET_HERMES_BIN=<the path it prints>"

# Variables that would point Hermes at the real user's state or change its output.
_DROP_PREFIXES = ("HERMES_",)
_DROP_NAMES = {
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "ftp_proxy",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
}


def default_venv() -> Path:
    venv = os.environ.get("HERMES_FLEET_HERMES_VENV")
    if venv:
        return Path(venv)
    return Path.home() / ".cache" / "hermes-fleet" / f"hermes-agent-{HERMES_VERSION}"


def hermes_bin() -> Path | None:
    """The hermes binary to test against, or None when it is not installed."""
    explicit = os.environ.get("HERMES_FLEET_HERMES_BIN")
    candidate = Path(explicit) if explicit else default_venv() / "bin" / "hermes"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def require_hermes() -> Path:
    """The hermes binary; the calling test is skipped when it is not installed, and failed on CI
    (which installs it: a missing Hermes there is a broken install, not a reason to skip)."""
    binary = hermes_bin()
    if binary is not None:
        return binary
    message = f"hermes-agent 0.19.0 is not installed: {INSTALL_HINT}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


class HermesCLI:
    """The real `hermes` binary bound to one Hermes root.

    0.19 exits 0 on several failures (cron, `sessions list` without a DB, ...), so callers must
    check `stdout`/`stderr` as well as `returncode`.
    """

    def __init__(self, binary: Path, root: Path, scratch: Path) -> None:
        self.binary = Path(binary)
        self.root = Path(root)
        self.userhome = Path(scratch) / "userhome"
        self.userhome.mkdir(parents=True, exist_ok=True)

    @property
    def python_bin(self) -> Path:
        # The venv's interpreter sits beside the console script.
        return self.binary.parent / "python"

    def env(self, profile: str | None = None) -> dict[str, str]:
        """The scrubbed environment; with `profile`, HERMES_HOME is that profile (what `-p` sets)."""
        home = self.root if profile in (None, "default") else self.root / "profiles" / str(profile)
        env = {key: value for key, value in os.environ.items() if key not in _DROP_NAMES and not key.startswith(_DROP_PREFIXES)}
        env.update(
            HOME=str(self.userhome),
            HERMES_HOME=str(home),
            NO_COLOR="1",
            TERM="dumb",
            PYTHONIOENCODING="utf-8",
        )
        return env

    def run(
        self,
        *args: str,
        profile: str | None = None,
        check: bool = True,
        input: str | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(self.binary)]
        if profile is not None:
            argv += ["-p", profile]
        argv += [str(a) for a in args]
        return self._exec(argv, check=check, input=input, timeout=timeout)

    def python(
        self,
        code: str,
        *,
        profile: str | None = None,
        check: bool = True,
        timeout: float = 120,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a snippet in the Hermes venv, e.g. to read `SessionDB` directly.

        Same environment as `run`; with `profile`, HERMES_HOME points at that profile, as `-p` does.
        """
        argv = [str(self.python_bin), "-c", code]
        return self._exec(argv, check=check, input=input, timeout=timeout, env=self.env(profile))

    def _exec(
        self,
        argv: list[str],
        *,
        check: bool,
        input: str | None,
        timeout: float,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            argv,
            env=env if env is not None else self.env(),
            cwd=self.userhome,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
            )
        return proc
