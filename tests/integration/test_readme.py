"""The README and the examples' README run as written.

Every command in a ```console block (the `$ ` lines) or a ```sh block of README.md and
examples/README.md runs, in order, in one shell context (cd and export carry over), in a
temporary HOME. The README walk starts from a fresh clone of this checkout and goes the way a
newcomer does: scripts/demo, the commands the demo prints, install with pipx and with pip,
the plugin into a Hermes of its own, init, validate of the generated repository, a plan, an apply.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Commands shown but not run here, and why. Each must still be in the document (no stale entries).
NOT_RUN = {
    "scripts/test": "it is this test suite, and it installs into the shared Hermes environment of ~/.cache",
}
# pip's notices about this machine's own package-index configuration, not about hermes-fleet
MACHINE_NOISE = re.compile(r"^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$")


def commands_in(markdown: str) -> list[str]:
    """The commands of a Markdown file: `$ ` lines of console blocks, every line of sh blocks."""
    commands: list[str] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", markdown, flags=re.M | re.S):
        lines = body.splitlines()
        if lang == "console":
            lines = [line[2:] for line in lines if line.startswith("$ ")]
        elif lang not in ("sh", "bash"):
            continue
        pending = ""
        for line in lines:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            commands.append(re.sub(r"\s+# .*$", "", pending + line).strip())  # a trailing comment is no part of it
            pending = ""
    return commands


class Shell:
    """Runs commands one at a time, carrying the working folder and exported variables over."""

    def __init__(self, cwd: Path, env: dict[str, str], state: Path) -> None:
        self.cwd, self.env, self.state = cwd, env, state
        state.write_text("")

    def run(self, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        script = (
            f'source {self.state}\ncd "$__CWD"\n{command}\n__rc=$?\n'
            f'declare -px | grep -v -E "^declare -x (__CWD|OLDPWD|PWD|SHLVL|_)=" > {self.state}.new\n'
            f"mv {self.state}.new {self.state}\npwd > {self.state}.cwd\nexit $__rc\n"
        )
        proc = subprocess.run(
            ["bash", "-c", script],
            env={**self.env, "__CWD": str(self.cwd)},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        cwd_file = Path(f"{self.state}.cwd")
        if cwd_file.is_file():
            self.cwd = Path(cwd_file.read_text().strip())
        return proc

    def must(self, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        proc = self.run(command, timeout)
        assert proc.returncode == 0, f"`{command}` exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        return proc


def base_env(home: Path, path: list[Path]) -> dict[str, str]:
    keep = (
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_CONSTRAINT",
        "SSL_CERT_FILE",
    )
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([*map(str, path), "/usr/local/bin", "/usr/bin", "/bin"]),
        NO_COLOR="1",
        TERM="dumb",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def warnings_in(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if re.search(r"warn|deprecat", line, re.I) and not MACHINE_NOISE.match(line) and not re.search(r"\d+ warning\(s\)", line)
    ]


def test_not_run_commands_are_still_in_the_readme():
    assert set(NOT_RUN) <= set(commands_in((REPO / "README.md").read_text()))


def test_examples_readme_runs_as_written(tmp_path):
    """From the repository root, with `hermes-fleet` on PATH and a scratch HOME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hermes-fleet").write_text(f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m controller "$@"\n')
    (bin_dir / "hermes-fleet").chmod(0o755)
    (tmp_path / "home").mkdir()
    shell = Shell(REPO, base_env(tmp_path / "home", [bin_dir]), tmp_path / "state")
    commands = commands_in((REPO / "examples" / "README.md").read_text())
    assert len(commands) >= 15
    for command in commands:
        proc = shell.must(command)
        if "--detailed-exitcode" in command:
            assert "No changes" in proc.stdout
        if command.startswith("hermes-fleet validate -f examples/minimal examples/team"):
            assert "valid: 2 fleet(s), 2 valid, 0 invalid" in proc.stdout
    assert not (tmp_path / "home" / "demo-hermes").exists()  # the last command removed the scratch homes
    assert not (tmp_path / "home" / ".hermes").exists()  # nothing touched the default home


def fresh_clone(target: Path) -> Path:
    """This checkout as a fresh clone has it: tracked and new files, without ignored ones (.venv, caches)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


@pytest.mark.slow
def test_the_readme_walk_from_a_fresh_clone(tmp_path):
    home, clone, tools, hermes_bin = tmp_path / "home", tmp_path / "hermes-fleet", tmp_path / "tools", tmp_path / "hermes-bin"
    home.mkdir()
    hermes_bin.mkdir()
    fresh_clone(clone)
    env = base_env(home, [home / ".local" / "bin", tools / "bin", hermes_bin])
    shell = Shell(clone, env, tmp_path / "state")
    # What the reader already has: Python, pipx, and (for the plugin part) Hermes itself.
    shell.must(f"python3 -m venv {tools} && {tools}/bin/pip install --quiet pipx")
    hermes = shell.must("bash .ci/install-hermes", timeout=900).stdout.strip().splitlines()[-1]
    (hermes_bin / "hermes").symlink_to(hermes)

    commands = [c for c in commands_in((clone / "README.md").read_text()) if c not in NOT_RUN]
    seen = set()
    for command in commands:
        proc = shell.must(command, timeout=900)
        seen.add(command.split()[0] if command.split() else command)
        if command == "scripts/demo":
            assert warnings_in(proc.stdout + proc.stderr) == [], proc.stderr  # no warnings on a clean install
            run_demo_next_commands(shell, proc.stdout)
        if command.endswith("--version"):
            assert proc.stdout.startswith("hermes-fleet 0.1.0")
        if command in ("pipx install .", "scripts/install-plugin") or command.endswith("pip install ."):
            assert warnings_in(proc.stdout + proc.stderr) == [], proc.stdout + proc.stderr
        if command == "hermes-fleet validate -f fleet/":
            assert "valid: fleet 'my-fleet'" in proc.stdout
        if command == "hermes-fleet plan -f fleet/":
            assert "+ bot/assistant  create" in proc.stdout
        if command == "hermes-fleet status":
            assert "Fleet 'my-fleet': 1 bot(s) managed" in proc.stdout
    assert {"scripts/demo", "pipx", "scripts/install-plugin", "hermes", "hermes-fleet"} <= seen
    # The plugin installed by scripts/install-plugin runs inside Hermes, in the generated repository.
    plan = shell.must("hermes fleet plan -f fleet/ --detailed-exitcode")
    assert "No changes" in plan.stdout
    assert (clone / "my-fleet" / ".github" / "workflows" / "fleet.yml").is_file()
    assert (home / ".hermes" / "profiles" / "assistant" / "SOUL.md").is_file()


def run_demo_next_commands(shell: Shell, out: str) -> None:
    commands, taking = [], False
    for line in out.splitlines():
        if line in ("Next (each line runs as printed):", "Look at it with Hermes itself:"):
            taking = True
        elif line.startswith("  ") and taking:
            commands.append(line.strip())
        else:
            taking = False
    assert len(commands) >= 8, out  # hermes-fleet's own and, with Hermes installed, Hermes' view
    assert any(c.startswith("HERMES_HOME=") and " hermes profile list" in c for c in commands), out
    for command in commands:
        proc = shell.must(command)
        if "profile list" in command:
            assert "researcher" in proc.stdout
    (remove,) = [line.split("Remove the demo with: ", 1)[1] for line in out.splitlines() if "Remove the demo with: " in line]
    shell.must(remove)
