"""Runtime health of one fleet, read-only from Hermes' own state (core.health decides, this reads).

For each bot the fleet owns: its routines' last runs (its `cron/jobs.json`, by the job ids in the
inventory), its cron ticker's heartbeat, whether a gateway runs for it, and whether its model
provider finds a credential (its `config.yaml` `model.provider`, its `.env`, its and the root's
`auth.json`). Used by `status` and by the reconciler (metrics and alerts on transitions).
Facts: docs/hermes/runtime.md.
"""

from __future__ import annotations

import time
from pathlib import Path

from controller.adapters import hermes_install, obscache, runtime
from controller.adapters.home import profile_dir
from controller.core import health
from controller.core.inventory import Inventory, routine_parts, split_key
from controller.engine import observing, records
from controller.errors import ControllerError
from controller.hermes import DEFAULT_PROFILE, versions


def check(
    root: Path,
    fleet: str,
    *,
    now: float | None = None,
    inventory: Inventory | None = None,
    reads: observing.HomeReads | None = None,
    hermes_version: str | None = None,
    kept: dict[str, tuple[object, health.BotRuntime]] | None = None,
    only: frozenset[str] | None = None,
) -> health.Health:
    """The runtime health of a fleet's bots; `reads`: what the caller read of the home already.

    `hermes_version` (detected when not given) tells whether a multiplexing root gateway ticks the
    stores of the profiles it serves (docs/hermes/cron.md#scheduler). `kept`: a watch loop's
    runtimes of the previous check, updated here (see _kept). `only`: these bots alone (a selection:
    the others are not read)."""
    inventory = inventory or records.load(root, fleet)
    reads = reads or observing.HomeReads(root)
    routines: dict[str, list[tuple[str, str]]] = {}
    for key in inventory.keys_of("routine"):
        name = split_key(key)[1]
        routines.setdefault(routine_parts(name)[0], []).append((name, str(inventory.objects[key].get("job_id") or "")))
    root_gateway = runtime.gateway(root)
    multiplexer_ticks = versions.multiplexer_ticks_served_stores(hermes_install.detect(hermes_version).version)
    root_stored = runtime.credential_stores(root)
    bots = []
    held = dict(kept or {})
    if kept is not None:
        kept.clear()
    for name in sorted(set(inventory.owned_bots()) | set(routines)):
        if only is not None and name not in only:
            continue
        owned = sorted(routines.get(name, []))
        what = (owned, root_gateway, root_stored, multiplexer_ticks)
        bot = _kept(held.get(name), what, reads.cache, name)
        if bot is None:
            bot = bot_runtime(
                root,
                name,
                owned=owned,
                root_gateway=root_gateway,
                root_stored=root_stored,
                reads=reads,
                multiplexer_ticks=multiplexer_ticks,
            )
        if kept is not None and not bot.errors:
            kept[name] = (what, bot)
        bots.append(bot)
    mcp = hermes_install.mcp_library() if any(b.mcp_servers for b in bots) else None
    return health.evaluate(
        bots, time.time() if now is None else now, mcp_library=mcp.available if mcp else None, mcp_where=mcp.where if mcp else ""
    )


def _kept(
    held: tuple[object, health.BotRuntime] | None, what: object, cache: obscache.ObservationCache | None, name: str
) -> health.BotRuntime | None:
    """A bot's runtime as the previous check read it, while nothing it was read from can have
    changed: a watch loop's trusted pass (no file event on its profile folder, where Hermes writes
    its jobs, heartbeat, gateway and credential files; not the full pass: engine/observecache.py),
    the same routines and the same root gateway and credentials. A gateway that was running is
    asked again: a process can end without a file changing. Its age is evaluated afresh (core.health)."""
    if held is None or cache is None or not (cache.keep_live and cache.use and cache.trusted) or name in cache.dirty:
        return None
    seen, bot = held
    return bot if seen == what and not bot.gateway.running else None


def bot_runtime(
    root: Path,
    name: str,
    *,
    owned: list[tuple[str, str]],
    root_gateway: runtime.GatewayProcess,
    root_stored: frozenset[str],
    reads: observing.HomeReads,
    multiplexer_ticks: bool = True,
) -> health.BotRuntime:
    folder = profile_dir(root, name)
    facts = reads.facts(name)
    errors = list(facts.errors)
    provider, env_keys = facts.provider, facts.env_keys
    stored = runtime.credential_stores(folder) | (root_stored if name != DEFAULT_PROFILE else frozenset())
    jobs: list[dict[str, object]] = []
    try:
        jobs = list(reads.jobs(name))
    except ControllerError as exc:
        errors.append(str(exc))
    by_id = {str(j.get("id")): j for j in jobs}
    routines = []
    for routine, job_id in sorted(owned):
        job = by_id.get(job_id)
        if job is None:
            routines.append(health.RoutineRuntime(routine, job_id, found=False))
            continue
        routines.append(
            health.RoutineRuntime(
                routine,
                job_id,
                found=True,
                enabled=job.get("enabled") is not False,
                state=_text(job.get("state")),
                last_status=_text(job.get("last_status")),
                last_error=_text(job.get("last_error")),
                last_delivery_error=_text(job.get("last_delivery_error")),
                last_run_at=_text(job.get("last_run_at")),
                next_run_at=_text(job.get("next_run_at")),
            )
        )
    own = runtime.gateway(folder)
    if own.running:
        gateway = health.GatewayRuntime(True, own.pid, own.state, own.source)
    elif name != DEFAULT_PROFILE and root_gateway.running and name in root_gateway.served_profiles:
        # Hermes main: one gateway may serve several profiles (docs/hermes/runtime.md#gateway-process).
        gateway = health.GatewayRuntime(True, root_gateway.pid, root_gateway.state, "root", ticks_store=multiplexer_ticks)
    else:
        gateway = health.GatewayRuntime(False, None, own.state, "")
    heartbeat, success = runtime.ticker(folder)
    return health.BotRuntime(
        bot=name,
        provider=str(provider) if provider else None,
        env_keys=env_keys,
        stored=stored,
        heartbeat=heartbeat,
        last_success=success,
        gateway=gateway,
        routines=tuple(routines),
        errors=tuple(errors),
        mcp_servers=facts.mcp_servers,
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)
