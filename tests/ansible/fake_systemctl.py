#!/usr/bin/env python3
"""A `systemctl` for the Ansible lab, where no systemd runs: units are files, their state is JSON.

It answers what Ansible's `systemd_service` module asks (ansible/modules/systemd_service.py in
ansible-core: `show`, `is-enabled`, `enable`, `start`, `stop`, `restart`, `daemon-reload`) and keeps
the rules of systemd that the rollout relies on:

- a unit is found by its file in one of the unit folders (FAKE_SYSTEMCTL_UNIT_DIRS, colon-separated);
  an instance `name@inst.service` is loaded from its template `name@.service` (systemd.unit(5),
  "Unit file load path" and templates);
- `EnvironmentFile=` is read when the unit starts, never later: a changed file takes effect at the
  next start or restart (systemd.exec(5), EnvironmentFile=). A leading `-` makes a missing file fine.

So a unit's state records, besides active/inactive, the environment it was started with: for the
watcher, the HERMES_FLEET_REF it follows. State lives in FAKE_SYSTEMCTL_STATE (one JSON per unit).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def unit_file(unit: str) -> Path | None:
    base, at, rest = unit.partition("@")
    names = [unit] + ([f"{base}@{rest[rest.index('.') :]}"] if at and "." in rest else [])
    for folder in os.environ.get("FAKE_SYSTEMCTL_UNIT_DIRS", "").split(":"):
        for name in names:
            if folder and (Path(folder) / name).is_file():
                return Path(folder) / name
    return None


def state_path(unit: str) -> Path:
    return Path(os.environ["FAKE_SYSTEMCTL_STATE"]) / f"{unit}.json"


def load(unit: str) -> dict:
    path = state_path(unit)
    return json.loads(path.read_text()) if path.exists() else {"active": False, "enabled": False, "starts": 0, "env": {}}


def save(unit: str, state: dict) -> None:
    path = state_path(unit)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(temp, path)  # Ansible's forks run several systemctl at once


def environment(path: Path) -> dict[str, str]:
    """The unit's EnvironmentFile= variables, read now (at start)."""
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("EnvironmentFile="):
            continue
        name = line.split("=", 1)[1].strip()
        optional = name.startswith("-")
        source = Path(name.lstrip("-"))
        if not source.exists():
            if optional:
                continue
            raise SystemExit(f"Failed to load environment files: {source}")
        for entry in source.read_text().splitlines():
            if "=" in entry and not entry.lstrip().startswith("#"):
                key, value = entry.split("=", 1)
                env[key.strip()] = value.strip().strip("'\"")
    return env


def start(unit: str, state: dict, path: Path) -> None:
    state.update(active=True, starts=state["starts"] + 1, env=environment(path))


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("-")]
    if not args:
        return 0
    verb, units = args[0], [u.strip("'") for u in args[1:]]
    if verb == "daemon-reload":
        return 0
    for unit in units:
        path = unit_file(unit)
        state = load(unit)
        if verb == "show":
            if path is None:
                print(f"Id={unit}\nLoadState=not-found\nActiveState=inactive\nSubState=dead")
            else:
                active = "active" if state["active"] else "inactive"
                print(f"Id={unit}\nLoadState=loaded\nActiveState={active}\nSubState={'running' if state['active'] else 'dead'}")
                print(f"UnitFileState={'enabled' if state['enabled'] else 'disabled'}")
            continue
        if path is None:
            print(f"Unit {unit} not found.", file=sys.stderr)
            return 5
        if verb == "is-enabled":
            print("enabled" if state["enabled"] else "disabled")
            return 0 if state["enabled"] else 1
        if verb == "is-active":
            print("active" if state["active"] else "inactive")
            return 0 if state["active"] else 3
        if verb == "enable":
            state["enabled"] = True
        elif verb == "disable":
            state["enabled"] = False
        elif verb == "start":
            if not state["active"]:
                start(unit, state, path)
        elif verb == "stop":
            state["active"] = False
        elif verb == "restart":
            start(unit, state, path)
        else:
            print(f"fake systemctl: {verb} is not supported", file=sys.stderr)
            return 1
        save(unit, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
