"""Reconciling: one pass of validate-free convergence, shared by `apply` and the `watch` loop.

`plan_home` observes the home read-only and plans; `apply_once` re-plans under the apply lock,
refuses conflicts before any write, applies, and records the run in the inventory. The verbs in
commands.py and the reconciler in watching.py only add input (manifests) and output around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import applying, locking, planning
from controller import inventory as inv
from controller import secrets as secrets_mod
from controller.adapters import cronstore
from controller.desired import DesiredState
from controller.errors import ConflictError, ControllerError
from controller.naming import DEFAULT_PROFILE
from controller.observed import LiveProfile, observe_profile


def gather(root: Path, state: DesiredState, *, prune: bool = False, adopt: bool = False,
           yes: bool = False, gateway: Any = None) -> planning.Inputs:
    """Observe the home and resolve secrets for everything the plan will look at (read-only)."""
    inventory = inv.load(root, state.fleet)
    foreign, foreign_install = _foreign(root, state.fleet)
    names = set(state.bots) | set(inventory.owned_bots())
    live: dict[str, LiveProfile] = {DEFAULT_PROFILE: observe_profile(root, DEFAULT_PROFILE,
                                                                     with_bot_chat=DEFAULT_PROFILE in state.bots)}
    for name in sorted(names - {DEFAULT_PROFILE}):
        live[name] = observe_profile(root, name)
    inputs = planning.Inputs(state=state, inventory=inventory, live=live, env_values={}, secret_keys={},
                             foreign=foreign, foreign_install=foreign_install, prune=prune, adopt=adopt, yes=yes)
    _observe_routines(root, state, inputs)
    _observe_rooms(root, state, inputs, gateway)
    _resolve_env("", state.install_env, inputs)
    for name, bot in state.bots.items():
        _resolve_env(name, bot.env, inputs)
        if bot.avatar_image:
            inputs.avatars[name] = _image_digest(bot.avatar_image)
    return inputs


def _observe_routines(root: Path, state: DesiredState, inputs: planning.Inputs) -> None:
    """Each bot's own cron store, and the Hermes `timezone` its scheduler uses."""
    from controller import routines

    owners = {k.split("/")[1] for k in inputs.inventory.objects if k.startswith("routine/")}
    for name in sorted(owners | {n for n, b in state.bots.items() if b.routines}):
        live = inputs.live.get(name) or observe_profile(root, name, with_bot_chat=False)
        try:
            inputs.jobs[name] = cronstore.read_jobs(live.path) or [] if live.exists else []
        except ControllerError as exc:
            inputs.job_errors[name] = str(exc)
        tz_name = _desired_timezone(state, name)
        if tz_name is None:
            tz_name = live.config_value("timezone")[1] if live.config is not None else None
        inputs.timezones[name] = routines.zone(tz_name)


def _observe_rooms(root: Path, state: DesiredState, inputs: planning.Inputs, gateway: Any) -> None:
    """The gateway's rooms, read-only (groups.capabilities + groups.list); only when rooms matter."""
    from controller import rooms

    inputs.gateway = gateway
    if rooms.needed(state, inputs.inventory):
        inputs.rooms = rooms.observe(root, gateway)


def _desired_timezone(state: DesiredState, name: str) -> str | None:
    if name == DEFAULT_PROFILE:
        bot_tz = state.bots[name].config.get("timezone") if name in state.bots else None
        return bot_tz or state.install_config.get("timezone")
    return state.bots[name].config.get("timezone") if name in state.bots else None


def _resolve_env(owner: str, entries: dict[str, Any], inputs: planning.Inputs) -> None:
    from controller.adapters import envfile

    values: dict[str, str] = {}
    for key, entry in entries.items():
        try:
            values[key] = secrets_mod.resolve(entry)
            # A value Hermes' .env cannot carry (a line break, a ${...}) fails its bot here, at
            # plan time, before any of that bot's files is written: never half a bot.
            envfile.check_entry(key, values[key])
        except secrets_mod.SecretUnavailable as exc:
            inputs.secret_errors[owner] = f"env {key}: {exc}"
        except ValueError as exc:
            values.pop(key, None)
            inputs.secret_errors[owner] = f"env {key}: {exc}; change the value at its source"
    inputs.env_values[owner] = values
    inputs.secret_keys[owner] = {k for k, e in entries.items() if e.secret}


def _image_digest(path: str) -> tuple[str, str]:
    import hashlib

    from controller.validating import image_extension

    data = Path(path).read_bytes()
    return image_extension(data[:16]) or "png", hashlib.sha256(data).hexdigest()


def _foreign(root: Path, fleet: str) -> tuple[dict[str, str], dict[str, str]]:
    objects: dict[str, str] = {}
    install: dict[str, str] = {}
    for other in inv.all_fleets(root):
        if other == fleet:
            continue
        theirs = inv.load(root, other)
        for key in theirs.objects:
            objects.setdefault(key, other)
        for field in theirs.applied(inv.INSTALL_KEY):
            install.setdefault(field, other)
    return objects, install


@dataclass
class Planned:
    root: Path
    state: DesiredState
    inputs: planning.Inputs
    plan: planning.Plan
    files: list[str]


def plan_home(root: Path, state: DesiredState, files: list[str], *, prune: bool = False, adopt: bool = False,
              yes: bool = False, gateway: Any = None) -> Planned:
    """Observe and plan; writes nothing (the gateway is only read)."""
    inputs = gather(root, state, prune=prune, adopt=adopt, yes=yes, gateway=gateway)
    return Planned(root, state, inputs, planning.plan(inputs), files)


def conflict_error(planned: Planned) -> ConflictError:
    names = ", ".join(f"{c.kind}/{c.name}" for c in planned.plan.conflicts)
    return ConflictError(f"apply refused, nothing was changed: conflict on {names}",
                         hint="see the reasons above (--adopt takes over unmanaged profiles; --yes "
                         "confirms a large prune)")


def apply_once(root: Path, state: DesiredState, files: list[str], *, prune: bool = False, adopt: bool = False,
               yes: bool = False, lock_timeout: float = 10.0, revision: str | None = None,
               before_apply: Callable[[Planned], None] | None = None,
               on_conflict: Callable[[Planned], None] | None = None,
               should_stop: Callable[[], bool] | None = None,
               gateway: Any = None) -> tuple[Planned, applying.ApplyResult]:
    """Plan, then apply under the lock. Conflicts raise ConflictError before anything is written."""
    # A conflict visible before locking refuses here, read-only: taking the lock would already
    # create <home>/.hermes-fleet/apply.lock (and the home itself) for an apply that changes nothing.
    early = plan_home(root, state, files, prune=prune, adopt=adopt, yes=yes, gateway=gateway)
    if early.plan.conflicts:
        if on_conflict:
            on_conflict(early)
        raise conflict_error(early)
    with locking.apply_lock(root, timeout=lock_timeout):
        planned = plan_home(root, state, files, prune=prune, adopt=adopt, yes=yes, gateway=gateway)
        if planned.plan.conflicts:
            if on_conflict:
                on_conflict(planned)
            raise conflict_error(planned)
        if before_apply:
            before_apply(planned)
        results = applying.apply_plan(root, planned.plan, planned.inputs, should_stop=should_stop)
        finish_inventory(root, planned, results, revision=revision)
    return planned, results


def finish_inventory(root: Path, planned: Planned, results: Any, *, revision: str | None = None) -> None:
    inventory = planned.inputs.inventory
    failed = bool(results.failed or planned.plan.errors or results.abandoned)
    record = {"at": inv.now_iso(), "digest": planned.state.digest, "manifests": planned.files,
              "result": "partial" if failed else "ok", "changed": len(results.done),
              "failed": len(results.failed) + len(planned.plan.errors)}
    if revision:
        record["revision"] = revision
    inventory.last_apply = record
    inventory.history.append(record)
    inv.save(root, inventory)  # always: the run itself is history, even when nothing changed


