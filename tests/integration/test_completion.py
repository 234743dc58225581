"""Shell completion: the script `hermes-fleet completion SHELL` prints, driven by a real bash.

Bash completes through the function the script registers, exactly as on a Tab key press; zsh and
fish scripts are checked by their own shells when those are installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import apply, hermes_fleet, write_fleet

REPO = Path(__file__).resolve().parents[2]

DRIVER = r"""
source <(hermes-fleet completion bash)
fn=$(complete -p hermes-fleet | sed -E 's/.* -F ([^ ]+) .*/\1/')
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
read -ra COMP_WORDS <<< "$1"
[[ "$1" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
"$fn" hermes-fleet "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a `hermes-fleet` that runs this checkout, HOME and the Hermes root in tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "hermes-fleet"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m controller "$@"\n')
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "_ARC"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        HOME=str(tmp_path / "user"),
        HERMES_HOME=str(tmp_path / "hermes"),
    )
    return env


def complete(line: str, env: dict[str, str], cwd: Path) -> list[str]:
    proc = subprocess.run(["bash", "-c", DRIVER, "driver", line], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    assert proc.returncode == 0, proc.stderr
    words = sorted(x.strip() for x in proc.stdout.splitlines() if x.strip())
    if not line.split(" ")[-1].startswith("-"):  # an empty word also offers the options: keep the values
        words = [w for w in words if not w.startswith("-")]
    return words


def test_bash_completes_verbs_options_and_choices(shell_env, tmp_path):
    verbs = complete("hermes-fleet ", shell_env, tmp_path)
    assert {"validate", "plan", "apply", "status", "export", "init", "completion", "watch", "restore"} <= set(verbs)
    assert {"history", "rollback", "suspend", "resume"} <= set(verbs)
    assert complete("hermes-fleet suspend --", shell_env, tmp_path) == ["--help", "--home", "--reason"]
    assert complete("hermes-fleet pl", shell_env, tmp_path) == ["plan"]
    assert complete("hermes-fleet plan --detailed", shell_env, tmp_path) == ["--detailed-exitcode"]
    assert complete("hermes-fleet validate -o ", shell_env, tmp_path) == ["github", "json", "junit", "text"]
    assert complete("hermes-fleet completion ", shell_env, tmp_path) == ["bash", "fish", "zsh"]


def test_bash_completes_bot_and_fleet_names_from_the_manifests_and_the_home(shell_env, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    assert hermes_fleet("init", repo, "--fleet", "acme").code == 0  # declares bot 'assistant' in fleet/
    (repo / "fleet" / "bots" / "helper.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Bot\nmetadata: {name: helper, fleet: acme}\n"
    )
    # bots from the manifests in ./fleet/ (export has no -f)
    assert complete("hermes-fleet export --bot ", shell_env, repo) == ["assistant", "helper"]
    assert complete("hermes-fleet export --bot he", shell_env, repo) == ["helper"]
    # ... and the profiles of the Hermes home, with the home's fleets for --fleet
    monkeypatch.setenv("HOME", shell_env["HOME"])
    other = write_fleet(tmp_path / "other", [{"name": "zeta"}], fleet="zfleet")
    assert apply(other, Path(shell_env["HERMES_HOME"])).code == 0
    assert complete("hermes-fleet export --bot ", shell_env, repo) == ["assistant", "helper", "zeta"]
    for verb in ("status", "watch", "plan"):  # the selectors complete the same names
        assert complete(f"hermes-fleet {verb} --bot ", shell_env, repo) == ["assistant", "helper", "zeta"]
    assert complete("hermes-fleet status --fleet ", shell_env, repo) == ["acme", "zfleet"]
    # -f on the command line wins over ./fleet/
    assert complete(f"hermes-fleet plan -f {other} --fleet ", shell_env, tmp_path) == ["zfleet"]


def test_bash_completes_backups_for_restore(shell_env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", shell_env["HOME"])
    home = Path(shell_env["HERMES_HOME"])
    bots = [{"name": n} for n in ("a", "b", "c", "d")]
    assert apply(write_fleet(tmp_path / "m", bots), home).code == 0
    assert apply(write_fleet(tmp_path / "m", bots[:3]), home, "--prune").code == 0
    (backup,) = [p.name for p in (home / ".hermes-fleet" / "backups").iterdir()]
    assert complete("hermes-fleet restore ", shell_env, tmp_path) == [backup]


def test_bash_completes_history_entries_for_rollback_and_show(shell_env, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", shell_env["HOME"])
    home = Path(shell_env["HERMES_HOME"])
    for title in ("One", "Two"):
        assert apply(write_fleet(tmp_path / "m", [{"name": "a", "title": title}]), home).code == 0
    assert complete("hermes-fleet rollback --to ", shell_env, tmp_path) == ["1", "2"]
    assert complete("hermes-fleet history show ", shell_env, tmp_path) == ["1", "2"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts(shell, shell_env, tmp_path):
    run = hermes_fleet("completion", shell)
    assert run.code == 0 and "hermes-fleet" in run.out
    binary = shutil.which(shell)
    if binary is None:
        # CI installs both shells (.ci/install-tools); there, a missing shell is a broken install, not a skip.
        assert not os.environ.get("CI"), f"{shell} is not installed on CI; .ci/install-tools installs it"
        pytest.skip(f"{shell} is not installed; the script was generated but not run")
    script = tmp_path / f"completion.{shell}"
    script.write_text(run.out)
    check = [binary, "-n", str(script)] if shell == "zsh" else [binary, "--no-execute", str(script)]
    proc = subprocess.run(check, capture_output=True, text=True, env=shell_env, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_completion_does_not_slow_or_change_a_normal_run(shell_env, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, controller.cli as c; c.main(['--version']) ; print('argcomplete' in sys.modules)"],
        capture_output=True,
        text=True,
        env=shell_env,
        timeout=60,
    )
    assert proc.stdout.strip().endswith("False")  # imported only when a shell asks
