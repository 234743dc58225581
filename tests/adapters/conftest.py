"""The real Hermes 0.19 CLI for the adapter tests, in the small form they use."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.hermes_support import HermesCLI


class RealHermes:
    """`run` and `python` that must succeed; `python` takes the HERMES_HOME it runs under."""

    def __init__(self, cli: HermesCLI) -> None:
        self.cli = cli
        self.root = cli.root

    def run(self, *args: str, profile: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.cli.run(*args, profile=profile, input="")

    def python(self, code: str, hermes_home: Path, stdin: str = "") -> str:
        env = {**self.cli.env(), "HERMES_HOME": str(hermes_home)}  # any folder, not only a profile
        argv = [str(self.cli.python_bin), "-c", code]
        return self.cli._exec(argv, check=True, input=stdin, timeout=120, env=env).stdout

    def create_profile(self, name: str) -> Path:
        self.run("profile", "create", name, "--no-alias")
        return self.root / "profiles" / name


@pytest.fixture
def real_hermes(hermes: HermesCLI) -> RealHermes:
    return RealHermes(hermes)
