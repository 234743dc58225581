"""The Ansible role and playbooks, run for real by ansible-playbook against local "machines".

Five machines (m1..m5) are inventory hosts with `ansible_connection: local`, each with its own
scratch Hermes home, config folder, state folder and unit folder; one git repository describes
all five (`host:` per bot). `playbooks/bootstrap.yml` sets each machine up (one of them installs
hermes-fleet from this checkout into a fresh virtualenv, the others use this one), writes the
secrets file with a peer key generated once on the control node, the deploy key, the watcher's
revision pin and unit. `playbooks/rollout.yml` rolls revisions out in waves: all five converge;
then a revision that one machine of the second wave cannot take (an unmanaged profile in the
way: `plan` exits 3) stops the rollout there: the canary has it, the failing wave applied
nothing, the last wave was never touched.
"""

from __future__ import annotations

import getpass
import grp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hermes_support import INSTALL_HINT, hermes_bin
from tests.tools import require_tool

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / "ansible"
MACHINES = ("m1", "m2", "m3", "m4", "m5")
WAVES = [1, 2, 2]  # m1 | m2 m3 | m4 m5

pytestmark = pytest.mark.slow


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


class Fleet:
    """A bare repository and a work tree; each commit is one revision of the manifests."""

    def __init__(self, base: Path) -> None:
        self.bare, self.work = base / "fleet.git", base / "work"
        _git(base, "init", "-q", "--bare", "--initial-branch=main", str(self.bare))
        _git(base, "init", "-q", "--initial-branch=main", str(self.work))
        for key, value in (("user.name", "Rollout Tester"), ("user.email", "r@example.invalid"), ("commit.gpgsign", "false")):
            _git(self.work, "config", key, value)
        _git(self.work, "remote", "add", "origin", str(self.bare))
        # The documented SOPS layout: an encrypted file among the manifests, read by sops, never as a manifest.
        self.sops, keygen = require_tool("sops"), require_tool("age-keygen")
        self.age_key = base / "age.key"
        subprocess.run([keygen, "-o", str(self.age_key)], check=True, capture_output=True, timeout=30)
        recipient = next(line.split(": ", 1)[1] for line in self.age_key.read_text().splitlines() if "public key: " in line)
        (base / "secrets.yaml").write_text("token: sops-token-0123456789\n")
        encrypted = subprocess.run(
            [self.sops, "--disable-version-check", "--encrypt", "--age", recipient, str(base / "secrets.yaml")],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip
        (self.work / "fleet").mkdir(parents=True)
        (self.work / "fleet" / "secrets.enc.yaml").write_text(encrypted)

    def commit(self, title: str, *, extra_bot_on: str | None = None, secret_command: dict[str, list[str]] | None = None) -> str:
        bots: list[dict[str, Any]] = [
            {"name": f"bot-{m}", "host": m, "title": f"{title} {m}", "env": {"PEER_KEY": {"from_env": "FLEET_PEER_KEY"}}}
            for m in MACHINES
        ]
        bots[0]["env"]["SOPS_TOKEN"] = {
            "from_command": [self.sops, "--disable-version-check", "-d", "--extract", '["token"]', "secrets.enc.yaml"]
        }
        for bot in bots:  # a secret read from a store on that machine: {machine: argv}
            if bot["host"] in (secret_command or {}):
                bot["env"]["STORE_TOKEN"] = {"from_command": (secret_command or {})[bot["host"]]}
        if extra_bot_on:
            bots.append({"name": f"extra-{extra_bot_on}", "host": extra_bot_on})
        doc = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "waves"}, "spec": {"bots": bots}}
        path = self.work / "fleet" / "fleet.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        _git(self.work, "add", "-A")
        _git(self.work, "commit", "-q", "-m", title)
        _git(self.work, "push", "-q", "origin", "main")
        return _git(self.work, "rev-parse", "HEAD")


class Lab:
    """The inventory of five local machines, and ansible-playbook runs against it."""

    def __init__(self, base: Path, fleet: Fleet) -> None:
        self.base = base
        self.fleet = fleet
        self.ansible_playbook = require_tool("ansible-playbook")
        user = getpass.getuser()
        group = grp.getgrgid(os.getgid()).gr_name
        self.machines = {m: base / m for m in MACHINES}
        hosts: dict[str, Any] = {}
        for name, root in self.machines.items():
            hosts[name] = {
                "hermes_fleet_home": str(root / "home"),
                "hermes_fleet_config_dir": str(root / "etc"),
                "hermes_fleet_state_dir": str(root / "state"),
                "hermes_fleet_unit_dir": str(root / "systemd"),
                "hermes_fleet_user_home": str(root / "user"),
                "hermes_fleet_gateway_profiles": ["default", f"bot-{name}"],  # each bot's routines need a ticker
                "hermes_fleet_unit_name": f"hermes-fleet-watch-{name}.service",  # one systemctl serves all five
                "hermes_fleet_gateway_unit": f"hermes-gateway-{name}@.service",
            }
        # m1 installs hermes-fleet from this checkout into a fresh virtualenv, like a new server.
        hosts["m1"].update(
            hermes_fleet_install_fleet=True,
            hermes_fleet_package=str(REPO),
            hermes_fleet_venv=str(self.machines["m1"] / "venv"),
            hermes_fleet_bin=str(self.machines["m1"] / "venv" / "bin" / "hermes-fleet"),
        )
        # m2 runs the Hermes Agent task against the hermes-agent 0.19.0 that CI installs
        # (.ci/install-hermes): already there, so pip changes nothing; the link is made.
        self.hermes = hermes_bin()
        if self.hermes is not None:
            hosts["m2"].update(
                hermes_fleet_install_hermes=True,
                hermes_fleet_agent_venv=str(self.hermes.parent.parent),
                hermes_fleet_agent_package="hermes-agent==0.19.0",
                hermes_fleet_agent_link=str(self.machines["m2"] / "bin" / "hermes"),
            )
        elif os.environ.get("CI") == "true":
            pytest.fail(f"hermes-agent 0.19.0 is not installed: {INSTALL_HINT}")
        self.deploy_key = "-----BEGIN OPENSSH PRIVATE KEY-----\ntest-deploy-key-material\n-----END OPENSSH PRIVATE KEY-----"
        inventory = {
            "fleet": {
                "hosts": hosts,
                "vars": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": sys.executable,
                    "hermes_fleet_become": False,
                    "hermes_fleet_manage_user": False,
                    "hermes_fleet_user": user,
                    "hermes_fleet_group": group,
                    "hermes_fleet_config_owner": user,
                    "hermes_fleet_systemd": True,  # tests/ansible/fake_systemctl.py
                    "hermes_fleet_install_hermes": False,
                    "hermes_fleet_install_fleet": False,
                    "hermes_fleet_bin": str(Path(sys.executable).parent / "hermes-fleet"),
                    "hermes_fleet_repo": self.fleet.bare.as_uri(),
                    "hermes_fleet_path": "fleet",
                    "hermes_fleet_health_bind": "0.0.0.0",
                    "hermes_fleet_metrics_token": "metrics-" + "m" * 30,
                    "hermes_fleet_deploy_key": self.deploy_key,
                    "hermes_fleet_known_hosts": ["git.example.internal ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHRlc3Q="],
                    # One key for the whole fleet, generated once on the control node and kept there.
                    "hermes_fleet_secrets": {
                        "SOPS_AGE_KEY_FILE": str(fleet.age_key),
                        "FLEET_PEER_KEY": "{{ lookup('ansible.builtin.password', '"
                        + str(base / "credentials" / "peer-key")
                        + " chars=ascii_letters,digits length=40') }}",
                    },
                },
            }
        }
        self.fake_bin = base / "fake-bin"
        self.fake_bin.mkdir()
        (self.fake_bin / "systemctl").symlink_to(Path(__file__).with_name("fake_systemctl.py"))
        self.inventory = base / "inventory.json"
        self.inventory.write_text(json.dumps(inventory, indent=1))

    def run(self, playbook: str, *extra: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env.update(
            FAKE_SYSTEMCTL_UNIT_DIRS=":".join(str(root / "systemd") for root in self.machines.values()),
            FAKE_SYSTEMCTL_STATE=str(self.base / "systemd-state"),
            ANSIBLE_CONFIG=str(ANSIBLE / "ansible.cfg"),
            ANSIBLE_ROLES_PATH=str(ANSIBLE / "roles"),
            ANSIBLE_LOCAL_TEMP=str(self.base / "ansible-tmp"),
            ANSIBLE_REMOTE_TEMP=str(self.base / "ansible-tmp"),
            ANSIBLE_HOME=str(self.base / "ansible-home"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORKS="5",
            HOME=str(self.base / "control-home"),
            PATH=f"{self.fake_bin}:{Path(sys.executable).parent}:{env.get('PATH', '')}",
        )
        return subprocess.run(
            [self.ansible_playbook, "-i", str(self.inventory), str(ANSIBLE / "playbooks" / playbook), *extra],
            cwd=ANSIBLE,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    def rollout(self, revision: str) -> subprocess.CompletedProcess[str]:
        return self.run("rollout.yml", "-e", f"fleet_revision={revision}", "-e", json.dumps({"hermes_fleet_waves": WAVES}))

    def pin(self, machine: str) -> str:
        return (self.machines[machine] / "etc" / "revision").read_text().strip()

    def watcher(self, machine: str) -> dict[str, Any]:
        """The watcher unit's state in the fake systemd: active, starts, and the env it started with."""
        path = self.base / "systemd-state" / f"hermes-fleet-watch-{machine}.service.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def title(self, machine: str) -> str | None:
        from ruamel.yaml import YAML

        path = self.machines[machine] / "home" / "profiles" / f"bot-{machine}" / "profile.yaml"
        if not path.exists():
            return None
        return (YAML(typ="safe", pure=True).load(path.read_text()) or {}).get("ui_meta", {}).get("hermes-bots", {}).get("title")


def _snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    return {
        p.relative_to(root).as_posix(): (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
        if not p.is_symlink()
    }


def _changed_tasks(output: str) -> set[tuple[str, str]]:
    """(task name, host) for every `changed: [host]` line of a run."""
    out: set[tuple[str, str]] = set()
    task = ""
    for line in output.splitlines():
        if line.startswith("TASK ["):
            task = line[6:].split("]", 1)[0].split(" : ", 1)[-1]
        elif line.startswith("changed: ["):
            out.add((task, line[10:].split("]", 1)[0]))
    return out


def _recap(output: str) -> dict[str, dict[str, int]]:
    """PLAY RECAP lines: host -> {ok, changed, unreachable, failed, skipped, ...}."""
    out: dict[str, dict[str, int]] = {}
    for match in re.finditer(r"^(\S+)\s+: ((?:\w+=\d+\s*)+)$", output, re.MULTILINE):
        out[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    base = tmp_path_factory.mktemp("ansible-lab")
    return Lab(base, Fleet(base))


def test_the_playbooks_pass_ansible_syntax_check(lab: Lab) -> None:
    for playbook in ("bootstrap.yml", "rollout.yml"):
        checked = lab.run(playbook, "--syntax-check")
        assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture(scope="module")
def bootstrapped(lab: Lab) -> tuple[str, subprocess.CompletedProcess[str]]:
    """The first revision committed and every machine bootstrapped: (its commit, the run)."""
    first = lab.fleet.commit("First")
    return first, lab.run("bootstrap.yml")


@pytest.fixture(scope="module")
def converged(lab: Lab, bootstrapped: tuple[str, subprocess.CompletedProcess[str]]) -> str:
    """The first revision rolled out to every machine: its commit."""
    first, run = bootstrapped
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    rollout = lab.rollout(first)
    assert rollout.returncode == 0, rollout.stdout[-6000:] + rollout.stderr[-3000:]
    lab.first_rollout = rollout  # type: ignore[attr-defined]
    return first


def test_bootstrap_sets_up_each_machine(lab: Lab, bootstrapped: tuple[str, subprocess.CompletedProcess[str]]) -> None:
    _, run = bootstrapped
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert set(_recap(run.stdout)) == set(MACHINES) and all(r["failed"] == 0 for r in _recap(run.stdout).values())
    installed = lab.machines["m1"] / "venv" / "bin" / "hermes-fleet"
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert version.returncode == 0 and version.stdout.startswith("hermes-fleet "), version.stderr
    keys = set()
    for name, root in lab.machines.items():
        env = root / "etc" / "env"
        assert env.stat().st_mode & 0o777 == 0o600, name
        (key,) = re.findall(r"^FLEET_PEER_KEY='([A-Za-z0-9]{40})'$", env.read_text(), re.MULTILINE)
        keys.add(key)
        deploy = root / "user" / ".ssh" / "fleet_deploy"
        assert deploy.stat().st_mode & 0o777 == 0o600 and deploy.read_text().strip() == lab.deploy_key
        assert "git.example.internal ssh-ed25519" in (root / "user" / ".ssh" / "known_hosts").read_text()
        assert (root / "etc" / "metrics.token").stat().st_mode & 0o777 == 0o640
        assert lab.pin(name) == "HERMES_FLEET_REF=main"
        unit = (root / "systemd" / f"hermes-fleet-watch-{name}.service").read_text()
        assert f"--host {name}" in unit and "--ref ${HERMES_FLEET_REF}" in unit and f"ReadWritePaths={root / 'home'}" in unit
        assert "--health-token-file" in unit and "--ssh-key" in unit and "metrics-mmm" not in unit
        assert (root / "home").stat().st_mode & 0o777 == 0o700
        gateway = (root / "systemd" / f"hermes-gateway-{name}@.service").read_text()
        assert "-p %i gateway run" in gateway and f"Environment=HERMES_HOME={root / 'home'}" in gateway
    if lab.hermes is not None:
        link = lab.machines["m2"] / "bin" / "hermes"
        assert link.is_symlink() and link.resolve() == lab.hermes.resolve()
        version = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=120, check=False)
        assert " v0.19.0 " in version.stdout.splitlines()[0], version.stdout + version.stderr
    assert len(keys) == 1, "the peer key is generated once and the same on every machine"
    assert (lab.base / "credentials" / "peer-key").is_file()
    assert next(iter(keys)) not in run.stdout + run.stderr, "no secret in Ansible's output"
    analyze = shutil.which("systemd-analyze")
    if analyze:  # the unit as systemd itself reads it
        unit = lab.machines["m2"] / "systemd" / "hermes-fleet-watch-m2.service"
        verified = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False)
        assert verified.returncode == 0, verified.stderr
        # The templated gateway unit, as the instance of one bot (the ExecStart binary must exist: m2 links it).
        instance = lab.machines["m2"] / "systemd" / "hermes-gateway-m2@bot-m2.service"
        instance.write_text((lab.machines["m2"] / "systemd" / "hermes-gateway-m2@.service").read_text())
        verified = subprocess.run([analyze, "verify", str(instance)], capture_output=True, text=True, timeout=60, check=False)
        instance.unlink()
        assert lab.hermes is None or verified.returncode == 0, verified.stderr
    again = lab.run("bootstrap.yml")
    assert again.returncode == 0, again.stdout[-4000:]
    # Idempotent; only pip reinstalls a package given as a local folder (m1's is this checkout).
    assert _changed_tasks(again.stdout) <= {("The hermes-fleet package, in its own virtualenv", "m1")}, again.stdout[-4000:]


def test_a_rollout_converges_every_machine_wave_by_wave(lab: Lab, converged: str) -> None:
    first = converged
    run = lab.first_rollout  # type: ignore[attr-defined]
    batches = re.findall(r"^PLAY \[Roll out a revision of the fleet\]", run.stdout, re.MULTILINE)
    assert len(batches) == len(WAVES), run.stdout[-3000:]
    for name in MACHINES:
        assert lab.title(name) == f"First {name}"
        assert lab.pin(name) == f"HERMES_FLEET_REF={first}"
        peer_key = (lab.machines[name] / "home" / "profiles" / f"bot-{name}" / ".env").read_text()
        assert re.search(r"^PEER_KEY=[A-Za-z0-9]{40}$", peer_key, re.MULTILINE), "the secret came from the secrets file"
    # fleet/secrets.enc.yaml sits among the manifests: sops read it for m1's bot, no plan read it as a manifest.
    assert "SOPS_TOKEN=sops-token-0123456789" in (lab.machines["m1"] / "home" / "profiles" / "bot-m1" / ".env").read_text()
    # Rolled out again: every plan finds nothing, nothing is applied.
    again = lab.rollout(first)
    assert again.returncode == 0 and all(r["changed"] == 0 for r in _recap(again.stdout).values()), again.stdout[-4000:]


def test_a_failing_machine_stops_the_rollout_at_its_wave(lab: Lab, converged: str) -> None:
    first = converged
    # m3 (second wave) holds a profile made by hand that the next revision wants to manage: a conflict.
    blocker = lab.machines["m3"] / "home" / "profiles" / "extra-m3"
    blocker.mkdir(parents=True)
    (blocker / "config.yaml").write_text("model: {default: made-by-hand}\n")
    second = lab.fleet.commit("Second", extra_bot_on="m3")
    untouched = {m: _snapshot(lab.machines[m]) for m in ("m2", "m4", "m5")}
    run = lab.rollout(second)
    assert run.returncode != 0, run.stdout[-6000:]
    recap = _recap(run.stdout)
    assert recap["m3"]["failed"] == 1, recap
    assert "bot/extra-m3  conflict" in run.stdout, run.stdout[-6000:]
    assert lab.title("m1") == "Second m1" and lab.pin("m1") == f"HERMES_FLEET_REF={second}", "the canary took it"
    for name in ("m2", "m3"):  # the failing wave: planned, nothing applied
        assert lab.title(name) == f"First {name}" and lab.pin(name) == f"HERMES_FLEET_REF={first}", name
    assert "m4" not in recap and "m5" not in recap, "the last wave never started"
    for name in ("m2", "m4", "m5"):
        now = _snapshot(lab.machines[name])
        changed = sorted(k for k in set(now) | set(untouched[name]) if now.get(k) != untouched[name].get(k))
        assert all(k.startswith("state/rollout") for k in changed), (name, changed)

    # The blocker resolved on m3 (adopted by hand), the same rollout goes through everywhere.
    adopt = subprocess.run(
        [str(lab.machines["m3"] / "etc" / "hermes-fleet-run"), "apply", "-R", "-f",
         str(lab.machines["m3"] / "state" / "rollout" / "fleet"), "--home", str(lab.machines["m3"] / "home"),
         "--host", "m3", "--adopt"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert adopt.returncode == 0, adopt.stdout + adopt.stderr
    done = lab.rollout(second)
    assert done.returncode == 0, done.stdout[-6000:]
    for name in MACHINES:
        assert lab.title(name) == f"Second {name}" and lab.pin(name) == f"HERMES_FLEET_REF={second}", name


def _refusing_store(base: Path) -> tuple[Path, Path]:
    """A secret store that answers `plan` but refuses `apply` while its switch file exists (a token
    revoked between the two): `apply` then fails for that bot (secret-unavailable, exit 1)."""
    switch = base / "store-refuses-apply"
    store = base / "secret-store"
    store.write_text(
        "#!/bin/sh\n"
        f"if [ -e '{switch}' ] && tr '\\0' ' ' < /proc/$PPID/cmdline | grep -q ' apply '; then exit 1; fi\n"
        "echo store-token-value\n"
    )
    store.chmod(0o755)
    switch.touch()
    return store, switch


def test_a_failed_apply_leaves_its_wave_pinned_and_watching(lab: Lab, converged: str) -> None:
    """m3's apply fails mid-wave (its secret store refuses): m2, in the same wave, finishes (applied,
    pinned to the new revision, its watcher restarted on it); m3 stays pinned to the revision it had,
    its watcher running again on that pin; the last wave never starts."""
    before = {m: lab.pin(m) for m in MACHINES}
    store, switch = _refusing_store(lab.base)
    third = lab.fleet.commit("Third", secret_command={"m3": [str(store)]})
    untouched = {m: _snapshot(lab.machines[m]) for m in ("m4", "m5")}
    run = lab.rollout(third)
    assert run.returncode != 0, run.stdout[-6000:]
    recap = _recap(run.stdout)
    assert recap["m3"]["failed"] == 1 and recap["m2"]["failed"] == 0 and recap["m3"]["rescued"] == 1, run.stdout[-8000:]
    assert "Apply this machine's slice: non-zero return code" in run.stdout, run.stdout[-6000:]
    assert "m4" not in recap and "m5" not in recap, "the last wave never started"
    for name in ("m1", "m2"):  # the canary, and m3's partner in the failing wave
        assert lab.title(name) == f"Third {name}" and lab.pin(name) == f"HERMES_FLEET_REF={third}", name
    assert lab.pin("m3") == before["m3"] and lab.title("m3") != "Third m3", "m3 keeps its old pin"
    for name in MACHINES:  # no machine unpinned or stopped: each watcher runs on the pin in its file
        watcher = lab.watcher(name)
        assert watcher["active"] and f"HERMES_FLEET_REF={watcher['env']['HERMES_FLEET_REF']}" == lab.pin(name), (name, watcher)
    for name in ("m4", "m5"):
        assert _snapshot(lab.machines[name]) == untouched[name], name
    assert "store-token-value" not in run.stdout + run.stderr

    switch.unlink()  # the store answers again: the same rollout goes through everywhere
    done = lab.rollout(third)
    assert done.returncode == 0, done.stdout[-6000:]
    for name in MACHINES:
        assert lab.title(name) == f"Third {name}" and lab.pin(name) == f"HERMES_FLEET_REF={third}", name
        assert lab.watcher(name)["env"]["HERMES_FLEET_REF"] == third, name
    env = (lab.machines["m3"] / "home" / "profiles" / "bot-m3" / ".env").read_text()
    assert "STORE_TOKEN=store-token-value" in env


def test_a_checked_rollout_plans_every_machine_and_changes_nothing(lab: Lab, converged: str) -> None:
    head = _git(lab.fleet.work, "rev-parse", "HEAD")
    fourth = lab.fleet.commit("Fourth")
    before = {m: (_snapshot(lab.machines[m] / "home"), lab.pin(m), lab.watcher(m)) for m in MACHINES}
    run = lab.run("rollout.yml", "--check", "-e", f"fleet_revision={fourth}", "-e", json.dumps({"hermes_fleet_waves": WAVES}))
    assert run.returncode == 0, run.stdout[-6000:]
    planned = {host for task, host in _changed_tasks(run.stdout) if task.startswith("Plan this machine's slice")}
    assert planned == set(MACHINES), run.stdout[-6000:]
    for name in MACHINES:
        assert f"Fourth {name}" in run.stdout, "the plan is shown"
        assert (_snapshot(lab.machines[name] / "home"), lab.pin(name), lab.watcher(name)) == before[name], name
    back = lab.rollout(head)  # leave the lab where it was
    assert back.returncode == 0, back.stdout[-6000:]


def test_rolling_back_is_rolling_out_the_previous_commit(lab: Lab, converged: str) -> None:
    first = converged
    current = _git(lab.fleet.work, "rev-parse", "HEAD")
    if current == first:  # run alone: make a newer revision to roll back from
        current = lab.fleet.commit("Newer")
        assert lab.rollout(current).returncode == 0
    back = lab.rollout(first)
    assert back.returncode == 0, back.stdout[-6000:]
    for name in MACHINES:
        assert lab.title(name) == f"First {name}" and lab.pin(name) == f"HERMES_FLEET_REF={first}", name
