"""`hermes-fleet init`: a fleet repository that validates, plans and runs its own CI command as generated."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from controller.verbs import init
from tests.integration.helpers import hermes_fleet

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "fleet/fleet.yaml",
    "fleet/policy.yaml",
    "fleet/bots/assistant.yaml",
    "fleet/bots/souls/assistant.md",
    "schemas/hermes-fleet.json",
    ".pre-commit-config.yaml",
    ".github/workflows/fleet.yml",
}


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_init_writes_a_repository_whose_ci_command_passes_as_generated(tmp_path):
    repo = tmp_path / "Acme Bots"
    run = hermes_fleet("init", repo)
    assert run.code == 0, run.text
    assert files_under(repo) == EXPECTED
    workflow = yaml.safe_load((repo / ".github/workflows/fleet.yml").read_text())
    assert set(workflow[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as True
    steps = workflow["jobs"]["validate"]["steps"]
    (command,) = [s["run"] for s in steps if "hermes-fleet validate" in s.get("run", "")]
    assert command == "hermes-fleet validate --strict -f fleet/ -o github"  # as strict as the pre-commit hook
    # Run it exactly as CI would, from the repository root, with the hermes-fleet of this checkout.
    argv = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, "-m", "controller", *argv[1:]],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "hermes-fleet validate: 0 error(s), 0 warning(s) in 3 file(s)\n"
    # The pre-commit hook is this project's own, validating the whole fleet folder.
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    config = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())
    (hook,) = config["repos"][0]["hooks"]
    assert hook["id"] == hooks[0]["id"] == "hermes-fleet-validate"
    assert hook["args"] == ["fleet/"] and hook["pass_filenames"] is False
    assert hooks[0]["entry"].split() + hook["args"] == ["hermes-fleet", "validate", "--strict", "-f", "fleet/"]
    assert hermes_fleet("validate", "--strict", "-f", repo / "fleet").code == 0


def test_init_fleet_is_named_after_the_folder_and_plans_into_a_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    repo = tmp_path / "Acme Bots"
    assert hermes_fleet("init", repo).code == 0
    run = hermes_fleet("plan", "-f", repo / "fleet", "--home", tmp_path / "home", "-o", "json")
    assert run.code == 0, run.text
    plan = run.json()
    assert plan["fleet"] == "acme-bots"
    assert {(o["kind"], o["name"], o["action"]) for o in plan["objects"]} >= {("bot", "assistant", "create")}
    apply = hermes_fleet("apply", "-f", repo / "fleet", "--home", tmp_path / "home")
    assert apply.code == 0, apply.text
    assert (tmp_path / "home/profiles/assistant/SOUL.md").read_text().startswith("You are a calm, concise assistant")


def test_schema_references_of_the_generated_manifests_resolve(tmp_path):
    repo = tmp_path / "repo"
    assert hermes_fleet("init", repo, "--fleet", "acme").code == 0
    for manifest in (repo / "fleet").rglob("*.yaml"):
        first = manifest.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), manifest
        target = (manifest.parent / first.split("$schema=", 1)[1]).resolve()
        assert target == (repo / "schemas/hermes-fleet.json").resolve()
    assert (repo / "schemas/hermes-fleet.json").read_text() == (REPO / "schemas/hermes-fleet.json").read_text()


def test_init_never_overwrites_and_fills_in_what_is_missing(tmp_path):
    repo = tmp_path / "repo"
    (repo / "fleet").mkdir(parents=True)
    mine = b"# my own fleet file\n"
    (repo / "fleet" / "fleet.yaml").write_bytes(mine)
    (repo / ".pre-commit-config.yaml").write_bytes(b"repos: []\n")
    run = hermes_fleet("init", repo, "--fleet", "acme")
    assert run.code == 0, run.text
    assert (repo / "fleet" / "fleet.yaml").read_bytes() == mine
    assert (repo / ".pre-commit-config.yaml").read_bytes() == b"repos: []\n"
    assert "kept" in run.out and "fleet/fleet.yaml (it exists; init never overwrites)" in run.out
    assert files_under(repo) == EXPECTED
    before = {p: (repo / p).read_bytes() for p in EXPECTED}
    again = hermes_fleet("init", repo, "--fleet", "other", "-o", "json")
    assert again.code == 0 and again.json()["written"] == [] and sorted(again.json()["kept"]) == sorted(EXPECTED)
    assert {p: (repo / p).read_bytes() for p in EXPECTED} == before


def test_source_and_rev_pin_the_hook_and_the_ci_install(tmp_path):
    repo = tmp_path / "repo"
    run = hermes_fleet("init", repo, "--source", "https://git.example/acme/hermes-fleet", "--rev", "v9.9.9")
    assert run.code == 0 and "note:" not in run.err
    config = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())
    assert config["repos"][0]["repo"] == "https://git.example/acme/hermes-fleet" and config["repos"][0]["rev"] == "v9.9.9"
    assert 'pip install "git+https://git.example/acme/hermes-fleet@v9.9.9"' in (repo / ".github/workflows/fleet.yml").read_text()


def git(folder: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *argv], capture_output=True, text=True, check=True).stdout.strip()


def test_without_source_the_checkouts_origin_and_commit_are_used_else_a_placeholder(tmp_path):
    checkout = tmp_path / "hermes-fleet"
    checkout.mkdir()
    (checkout / ".pre-commit-hooks.yaml").write_text((REPO / ".pre-commit-hooks.yaml").read_text())
    assert init.hook_source(None, None, checkout) == (init.PLACEHOLDER_SOURCE, init.UNPINNED_REV, False)
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    assert init.hook_source(None, None, checkout)[2] is False  # a clone without an origin
    git(checkout, "remote", "add", "origin", "https://git.example/me/hermes-fleet.git")
    head = git(checkout, "rev-parse", "HEAD")
    assert init.hook_source(None, None, checkout) == ("https://git.example/me/hermes-fleet.git", head, True)
    assert init.hook_source(None, "v1.2.3", checkout)[1] == "v1.2.3"


def test_the_ci_install_line_is_one_pip_takes(tmp_path):
    """pip installs `git+https://`, `git+ssh://`; an scp-form SSH origin is rewritten, a local path refused."""
    assert init.pip_url("https://git.example/a/hermes-fleet") == "git+https://git.example/a/hermes-fleet"
    assert init.pip_url("git@github.com:acme/hermes-fleet.git") == "git+ssh://git@github.com/acme/hermes-fleet.git"
    assert init.pip_url("ssh://git@host:2222/acme/hf.git") == "git+ssh://git@host:2222/acme/hf.git"
    assert init.pip_url("/home/me/src/hermes-fleet") is None
    assert init.pip_url("file:///home/me/src/hermes-fleet") is None
    ssh = hermes_fleet("init", tmp_path / "ssh", "--source", "git@github.com:acme/hermes-fleet.git", "--rev", "abc123")
    assert ssh.code == 0 and "note:" not in ssh.err
    workflow = (tmp_path / "ssh/.github/workflows/fleet.yml").read_text()
    assert 'pip install "git+ssh://git@github.com/acme/hermes-fleet.git@abc123"' in workflow
    assert "hermes-fleet validate --strict -f fleet/" in workflow
    local = hermes_fleet("init", tmp_path / "local", "--source", str(tmp_path / "clone"), "--rev", "abc123")
    assert local.code == 0 and "not a URL a CI runner can fetch" in local.err
    assert str(tmp_path / "clone") not in (tmp_path / "local/.github/workflows/fleet.yml").read_text()


def test_a_source_without_a_rev_follows_main_and_says_so(tmp_path):
    run = hermes_fleet("init", tmp_path / "repo", "--source", "https://git.example/acme/hermes-fleet")
    assert run.code == 0 and "pin a tag or commit with --rev" in run.err
    config = yaml.safe_load((tmp_path / "repo/.pre-commit-config.yaml").read_text())
    assert config["repos"][0]["rev"] == init.UNPINNED_REV


def test_with_a_placeholder_init_says_which_files_to_edit(tmp_path, monkeypatch):
    monkeypatch.setattr(init, "hook_source", lambda source, rev: (init.PLACEHOLDER_SOURCE, "v0.1.0", False))
    run = hermes_fleet("init", tmp_path / "repo")
    assert run.code == 0
    assert "note: set the URL of your copy of hermes-fleet in .pre-commit-config.yaml and .github/workflows/fleet.yml" in run.err
    assert init.PLACEHOLDER_SOURCE in (tmp_path / "repo/.github/workflows/fleet.yml").read_text()


def test_init_refuses_a_bad_fleet_name_and_a_file(tmp_path):
    run = hermes_fleet("init", tmp_path / "repo", "--fleet", "Not Valid")
    assert run.code == 2 and "invalid fleet name" in run.err and not (tmp_path / "repo").exists()
    (tmp_path / "file").write_text("x")
    run = hermes_fleet("init", tmp_path / "file")
    assert run.code == 2 and "is not a folder" in run.err
