"""Observing: the only place that reads the Hermes home (and asks the gateway) for a plan.

`observe` reads every profile a plan cares about (config.yaml, .env, profile.yaml, SOUL.md,
assets/avatar.*, state.db), each bot's cron store and timezone, the other fleets' inventories,
the gateway's rooms, and resolves secret references, once, into a frozen `core.types.Observed`.
Nothing here creates or writes a file (`plan` and `--dry-run` leave the tree byte-identical). A
file that cannot be read becomes an error on that one bot; other bots are observed as usual.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path
from typing import Any, TypeVar, cast

from controller.adapters import (
    configfile,
    cronstore,
    envfile,
    fsio,
    hermes_install,
    home,
    homebounds,
    honcho,
    obscache,
    profilemeta,
    profiles,
    runtime,
    sessions,
    sharing,
    wrappers,
)
from controller.adapters import gateway as gw
from controller.adapters import inventory as inventory_file
from controller.adapters.home import HomeLayout, ProfileLayout
from controller.core import mcp as mcp_servers
from controller.core import rooms
from controller.core.inventory import INSTALL_KEY, Inventory, bot_key, routine_parts, split_key
from controller.core.types import GatewayView, LiveProfile, Observed, Reason, RenameSeen
from controller.engine import observecache, records
from controller.errors import ControllerError, GatewayError, GatewayIncompatible, GatewayRefused, RefusedValue, SecretUnavailable
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE, image_extension, naming
from controller.manifests import references
from controller.manifests.desired import DesiredState, EnvEntry, Seat

T = TypeVar("T")
ROOM_PAGE = 500


def observe(
    root: Path,
    state: DesiredState,
    inventory: Inventory,
    gateway: gw.GatewayOptions | None = None,
    hermes_version: str | None = None,
    *,
    with_rooms: bool = True,
    cache: obscache.ObservationCache | None = None,
) -> Observed:
    """Everything a plan of `state` looks at, read once (read-only); the gateway only when rooms
    are involved and not left out (`with_rooms=False`: --no-rooms). With `cache`, a profile's files
    whose stat keys it holds are not read again (engine/observecache.py).

    ContainmentError (exit 3, before anything is written) when a profile it reads, or our own state
    under `.hermes-fleet/`, leads out of where it belongs through a symlink.
    """
    home.check_state(root)
    sources = rename_sources(state, inventory)
    names = set(state.bots) | set(inventory.owned_bots()) | sources
    # One pool for every profile's decoded files: the same keys and lists are held once (memory).
    pool = sharing.Sharer()
    live = {
        DEFAULT_PROFILE: observe_profile(
            root, DEFAULT_PROFILE, with_bot_chat=DEFAULT_PROFILE in state.bots, pool=pool, cache=cache
        )
    }
    # One listing of profiles/: a profile not in it is absent, with nothing to read or check
    # (a fresh home, or the new bots of a fleet, cost no system call each).
    present = home.profile_entries(root)
    for name in sorted(names - {DEFAULT_PROFILE}):
        if present is None or name in present:
            live[name] = observe_profile(root, name, pool=pool, cache=cache)
        else:
            tombstoned = profiles.TOMBSTONE_DIR in present and profiles.is_tombstoned(root, name)
            live[name] = LiveProfile(name=name, path=home.profile_dir(root, name), exists=False, tombstoned=tombstoned)
    foreign, foreign_install = _foreign(root, state.fleet)
    jobs, job_errors, timezones = _observe_routines(
        root, state=state, inventory=inventory, live=live, sources=sources, pool=pool, cache=cache
    )
    env_values: dict[str, Mapping[str, str]] = {}
    secret_keys: dict[str, frozenset[str]] = {}
    secret_errors: dict[str, str] = {}
    with references.command_cache():  # a from_command shared by many bots runs once per observation
        for owner, entries in [("", state.install_env), *((n, b.env) for n, b in state.bots.items())]:
            env_values[owner], error = resolve_env(entries)
            secret_keys[owner] = frozenset(k for k, e in entries.items() if e.secret)
            if error:
                secret_errors[owner] = error
    avatars = {name: image_digest(bot.avatar_image) for name, bot in state.bots.items() if bot.avatar_image}
    hermes = hermes_install.detect(hermes_version)
    managed = hermes_install.managed_scope()
    mcp = hermes_install.mcp_library() if mcp_servers.declared(state) else None
    return Observed(
        live=live,
        env_values=env_values,
        secret_keys=secret_keys,
        secret_errors=secret_errors,
        avatars=avatars,
        foreign=foreign,
        foreign_install=foreign_install,
        jobs=jobs,
        job_errors=job_errors,
        timezones=timezones,
        rooms=observe_rooms(root, gateway, seats=state.seats) if with_rooms and rooms.needed(state, inventory) else None,
        hermes_version=hermes.version,
        hermes_version_source=hermes.source,
        managed_scope=managed.path if managed else None,
        managed_config=managed.config if managed else {},
        renames=observe_renames(root, state, live),
        mcp_library=mcp.available if mcp else None,
        mcp_where=mcp.where if mcp else "",
        others=observe_others(root, present, names | {DEFAULT_PROFILE}),
    )


def observe_others(root: Path, present: frozenset[str] | None, seen: set[str]) -> dict[str, tuple[str | None, str | None]]:
    """The title and display name of every other live profile of the home (the Desktop's roster
    lists every profile: docs/hermes/bot-mode.md#mentions). A profile.yaml that cannot be read
    gives no friendly names; the profile's own name still counts."""
    others: dict[str, tuple[str | None, str | None]] = {}
    for name in sorted((present or frozenset()) - seen):
        if naming.profile_name_problem(name) is not None:
            continue  # staging folders, `.deleted`, files: not profiles
        path = home.profile_dir(root, name)
        if path.is_symlink() or not path.is_dir():
            continue
        try:
            meta = profilemeta.ProfileMeta.load(ProfileLayout(path).meta)
            record = meta.bot_record() or {}
            title = record.get("title")
            others[name] = (title if isinstance(title, str) else None, meta.display_name)
        except (ControllerError, OSError):
            others[name] = (None, None)
    return others


def rename_sources(state: DesiredState, inventory: Inventory) -> set[str]:
    """The old profiles of the renames still to be done: a rename this fleet finished (the inventory
    holds the new name and not the old) needs no look at the old name, which may be anything now."""
    return {
        b.renamed_from
        for b in state.bots.values()
        if b.renamed_from
        and DEFAULT_PROFILE not in (b.renamed_from, b.name)
        and (inventory.owns(bot_key(b.renamed_from)) or not inventory.owns(bot_key(b.name)))
    }


def observe_renames(root: Path, state: DesiredState, live: Mapping[str, LiveProfile]) -> dict[str, RenameSeen]:
    """For each bot with renamed_from: the marker inside the new folder, a gateway running for the
    old profile, and whether the old profile has a Honcho host block (docs/hermes/rename.md)."""
    out = {}
    for name, bot in state.bots.items():
        old = bot.renamed_from
        if old is None or DEFAULT_PROFILE in (old, name):
            continue
        marker = inventory_file.read_marker_any(root, name) if live[name].exists else None
        old_live = live.get(old)
        running = ""
        if old_live is not None and old_live.exists:
            process = runtime.gateway(old_live.path)
            if process.running:
                running = f"pid {process.pid}, from {process.source}"
        served = runtime.gateway(root)
        if served.running and old in served.served_profiles:
            running = running or f"the root's gateway (pid {served.pid}) serves profile {old!r}"
        out[name] = RenameSeen(
            source=old,
            target_marker=str(marker["profile"]) if marker and marker.get("fleet") == state.fleet else None,
            gateway_running=running,
            honcho=honcho.has_host(root, old, name if live[name].exists else old),
            alias=wrappers.has_wrapper(old),
        )
    return out


# --- profiles -------------------------------------------------------------------------------------


def observe_profile(
    root: Path,
    name: str,
    *,
    with_bot_chat: bool = True,
    pool: sharing.Sharer | None = None,
    cache: obscache.ObservationCache | None = None,
) -> LiveProfile:
    """One profile as it is on disk; ContainmentError (exit 3) when its folder is a symlink or a file
    hermes-fleet would write leads out of it (docs/reliability.md#containment).

    `pool` shares what the profiles' config.yaml files have in common (LiveProfile values are
    read, never changed in place)."""
    kept = _kept(cache, name, with_bot_chat)
    if kept is not None:
        return kept
    live = _observe_profile(root, name, with_bot_chat=with_bot_chat, pool=pool or sharing.Sharer(), cache=cache)
    if cache is not None and cache.keep_live and not live.errors:
        cache.live[(name, with_bot_chat)] = live
    return live


def _kept(cache: obscache.ObservationCache | None, name: str, with_bot_chat: bool) -> LiveProfile | None:
    """A watch loop's profile as the previous pass observed it, while no file event marked it
    (engine/observecache.py): nothing of it is read, not even its .env."""
    if cache is None or not (cache.keep_live and cache.use and cache.trusted) or name in cache.dirty:
        return None
    kept = cache.live.get((name, with_bot_chat))
    if kept is not None:
        cache.hits += 1
        cache.retain((f"profile:{name}", f"fence:{name}", f"botchat:{name}"))
    return cast("LiveProfile | None", kept)


def _observe_profile(
    root: Path, name: str, *, with_bot_chat: bool, pool: sharing.Sharer, cache: obscache.ObservationCache | None
) -> LiveProfile:
    path = _check_profile(root, name, cache)
    exists = path.is_dir()
    tombstoned = name != DEFAULT_PROFILE and profiles.is_tombstoned(root, name)
    if not exists:
        return LiveProfile(name=name, path=path, exists=False, tombstoned=tombstoned)
    hit, facts, keys = _lookup(cache, f"profile:{name}", lambda: observecache.profile_keys(path))
    fields = observecache.profile_fields(facts, name) if hit else None
    if fields is not None:
        errors: list[str] = []
        env = _read(errors, path, lambda: envfile.read_env(path / ProfileLayout.ENV))
        env_dict = env.as_dict() if env is not None else None
        marker_path = ProfileLayout(path).owner_marker
        live = LiveProfile(
            name=name, path=path, exists=True, tombstoned=tombstoned, env=env_dict, errors=tuple(errors), marker_path=marker_path,
            **fields,
        )  # fmt: skip
        return _with_bot_chat(live, root, cache) if with_bot_chat else live
    live, clean = _read_profile(root, name, path, tombstoned, pool)
    if cache is not None and clean and live.stray_marker is None:  # read again next time: an error, a stray marker
        cache.put(f"profile:{name}", keys, observecache.profile_facts(live))
    return _with_bot_chat(live, root, cache) if with_bot_chat else live


def _lookup(
    cache: obscache.ObservationCache | None, unit: str, keys_of: Callable[[], tuple[obscache.Key, ...] | None]
) -> tuple[bool, Any, tuple[obscache.Key, ...] | None]:
    return cache.lookup(unit, keys_of) if cache is not None else (False, None, None)


def _check_profile(root: Path, name: str, cache: obscache.ObservationCache | None) -> Path:
    """home.check_profile, skipped when the cache saw the profile's folders without a symlink in
    them and their stat keys have not moved since (the folder itself is still checked)."""
    if cache is None:
        return home.check_profile(root, name)
    path = home.check_profile_dir(root, name)
    hit, fenced, keys = cache.lookup(f"fence:{name}", lambda: observecache.fence_keys(path))
    if hit and fenced is True:
        observecache.vouch_fence(path)
        return path
    home.check_profile(root, name)
    if observecache.no_links(path):
        cache.put(f"fence:{name}", keys, True)
    return path


def _read_profile(root: Path, name: str, path: Path, tombstoned: bool, pool: sharing.Sharer) -> tuple[LiveProfile, bool]:
    """The profile read in full, and whether every file but .env read without an error."""
    errors: list[str] = []
    files = ProfileLayout(path)
    config = _read(errors, path, lambda: configfile.ConfigDoc.load(files.config))
    env_errors: list[str] = []
    env = _read(env_errors, path, lambda: envfile.read_env(files.env))
    errors += env_errors
    meta = _read(errors, path, lambda: profilemeta.ProfileMeta.load(files.meta))
    soul = _read_soul(errors, path)
    avatar, avatar_files = _read_avatar(errors, path)
    marker, marker_problem = inventory_file.read_marker_checked(root, name) if name != DEFAULT_PROFILE else (None, "")
    if marker_problem:
        errors.append(marker_problem)
    clean = len(errors) == len(env_errors)
    live = LiveProfile(
        name=name,
        path=path,
        exists=True,
        tombstoned=tombstoned,
        marker=marker if marker is not None and marker["profile"] == name else None,
        stray_marker=marker if marker is not None and marker["profile"] != name else None,
        marker_path=files.owner_marker,
        config=_shared_config(config, pool) if config is not None else None,
        env=env.as_dict() if env is not None else None,
        description=meta.description if meta is not None else None,
        display_name=meta.display_name if meta is not None else None,
        meta=meta.bot_record() if meta is not None else None,
        soul=soul,
        avatar=avatar,
        avatar_files=avatar_files,
        errors=tuple(errors),
    )
    return live, clean


def _with_bot_chat(live: LiveProfile, root: Path, cache: obscache.ObservationCache | None = None) -> LiveProfile:
    """`live` with its Bot Chat looked up (a read error of `state.db` comes last in `errors`)."""
    hit, found, keys = _lookup(cache, f"botchat:{live.name}", lambda: observecache.botchat_keys(live.path))
    if hit and isinstance(found, bool):
        return replace(live, bot_chat=found)
    errors = list(live.errors)
    found = _read(errors, live.path, lambda: sessions.find_bot_chat(live.path, root=root)) is not None
    if cache is not None and len(errors) == len(live.errors):
        cache.put(f"botchat:{live.name}", keys, found)
    return replace(live, bot_chat=found, errors=tuple(errors))


def refresh(root: Path, state: DesiredState, observed: Observed, cache: obscache.ObservationCache) -> None:
    """Observe again, through `cache`, the profiles and cron stores of `observed` (after an apply
    changed some of them): only files whose stat keys moved are read. No secret is resolved, no
    gateway asked. A profile that cannot be read now is left out of the cache."""
    pool = sharing.Sharer()
    for name in observed.live:
        try:
            live = observe_profile(
                root, name, with_bot_chat=name != DEFAULT_PROFILE or name in state.bots, pool=pool, cache=cache
            )
            if name in observed.jobs and live.exists:
                read_jobs(live.path, name, cache)
        except ControllerError:
            continue


class HomeReads:
    """What a verb that looks at every object of a home reads of each profile, once: `status`
    observes a bot for its drift and again for its runtime health, and reads a bot's cron store
    for each of its routines and again for its health (10,000 bots: 20,000 observations and
    40,000 reads of `jobs.json` before). Keeps each bot's cron jobs and the few facts health needs,
    never a whole observed profile (they would add up to the size of a plan)."""

    def __init__(self, root: Path, cache: obscache.ObservationCache | None = None) -> None:
        self.root = root
        self.cache = cache
        self._facts: dict[str, RuntimeFacts] = {}
        self._jobs: dict[str, list[dict[str, Any]] | ControllerError] = {}

    def profile(self, name: str, *, with_bot_chat: bool) -> LiveProfile:
        """observe_profile, noting the facts `health` reads of it (health looks at no Bot Chat, so
        they are taken before it is looked up: its read error is not health's)."""
        live = observe_profile(self.root, name, with_bot_chat=False, cache=self.cache)
        self._facts[name] = RuntimeFacts.of(live)
        return _with_bot_chat(live, self.root, self.cache) if with_bot_chat and live.exists else live

    def facts(self, name: str) -> RuntimeFacts:
        if name not in self._facts:
            self.profile(name, with_bot_chat=False)
        return self._facts[name]

    def jobs(self, name: str) -> list[dict[str, Any]]:
        """The jobs of profile `name`'s cron store ([] when it has none); the ControllerError of a
        store that cannot be read, each time it is asked for."""
        if name not in self._jobs:
            try:
                self._jobs[name] = read_jobs(home.profile_dir(self.root, name), name, self.cache) or []
            except ControllerError as exc:
                self._jobs[name] = exc
        got = self._jobs[name]
        if isinstance(got, ControllerError):
            raise got
        return got


@dataclass(frozen=True)
class RuntimeFacts:
    """What the runtime health check reads of an observed profile."""

    errors: tuple[str, ...]
    provider: Any  # config.yaml's model.provider (None when unset or no config)
    env_keys: frozenset[str]  # the .env keys with a non-empty value
    mcp_servers: tuple[str, ...] = ()  # its config.yaml's enabled MCP servers

    @classmethod
    def of(cls, live: LiveProfile) -> RuntimeFacts:
        provider = live.config_value("model.provider")[1] if live.config is not None else None
        env_keys = frozenset(k for k, v in (live.env or {}).items() if str(v).strip())
        servers = live.config_value("mcp_servers")[1] if live.config is not None else None
        enabled = tuple(sorted(str(k) for k, v in servers.items() if mcp_servers.enabled(v))) if isinstance(servers, dict) else ()
        return cls(tuple(live.errors), provider, env_keys, enabled)


def read_jobs(
    path: Path, name: str, cache: obscache.ObservationCache | None, pool: sharing.Sharer | None = None
) -> list[dict[str, Any]] | None:
    """cronstore.read_jobs of profile `name` at `path`, or what the cache holds of it (its jobs
    share their keys already: one JSON document); jobs read are shared through `pool` if given."""
    hit, facts, keys = _lookup(cache, f"jobs:{name}", lambda: observecache.jobs_keys(path))
    valid, cached = observecache.jobs_facts(facts) if hit else (False, None)
    if valid:
        return cached
    jobs = cronstore.read_jobs(path)
    if pool is not None and jobs is not None:
        jobs = [pool.share(j) for j in jobs]
    if cache is not None:
        cache.put(f"jobs:{name}", keys, jobs)
    return jobs


def _shared_config(config: configfile.ConfigDoc, pool: sharing.Sharer) -> dict[str, Any]:
    # The parse memo's values are pooled already: taken as they are, no copy and no second walk.
    plain = config.shared_plain()
    return plain if plain is not None else pool.share(config.as_dict())


def _read(errors: list[str], path: Path, reader: Callable[[], T]) -> T | None:
    # The adapters map every OSError onto the error tree (a HermesStateError naming the file).
    try:
        return reader()
    except ControllerError as exc:
        errors.append(str(exc))
    return None


def _read_soul(errors: list[str], path: Path) -> str | None:
    soul = ProfileLayout(path).soul
    data = _read(errors, path, lambda: fsio.read_bounded(soul, homebounds.SOUL_BYTES))
    if data is None:
        return None
    try:
        # Exactly as written (no newline translation): a soul with a "\r" must compare equal to itself.
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.append(f"{soul}: not UTF-8 text ({exc.reason} at byte {exc.start})")
        return None


def _read_avatar(errors: list[str], path: Path) -> tuple[tuple[str, str] | None, tuple[str, ...]]:
    found: list[str] = []
    avatar = None
    for ext in AVATAR_EXTENSIONS:
        candidate = ProfileLayout(path).avatar(ext)
        if not candidate.is_file():
            continue
        found.append(ext)
        if avatar is None:
            try:
                data = fsio.read_bounded(candidate, homebounds.AVATAR_BYTES)
            except ControllerError as exc:
                errors.append(str(exc))
                continue
            if data is not None:
                avatar = (ext, hashlib.sha256(data).hexdigest())
    return avatar, tuple(found)


def image_digest(path: str) -> tuple[str, str]:
    """(extension, sha256) of an avatar image a manifest names."""
    data = references.read_image(path)
    return image_extension(data[:16]) or "png", hashlib.sha256(data).hexdigest()


# --- routines -------------------------------------------------------------------------------------


def _observe_routines(
    root: Path,
    *,
    state: DesiredState,
    inventory: Inventory,
    live: Mapping[str, LiveProfile],
    sources: set[str],
    pool: sharing.Sharer,
    cache: obscache.ObservationCache | None = None,
) -> tuple[dict[str, tuple[Mapping[str, Any], ...]], dict[str, str], dict[str, tzinfo | None]]:
    """Each bot's own cron store, and the Hermes `timezone` its scheduler uses (a rename's old
    profile's too: its jobs are the renamed bot's). The jobs' 33 keys and short values are held
    once for all stores (`pool`; the planner only reads them)."""
    jobs: dict[str, tuple[Mapping[str, Any], ...]] = {}
    errors: dict[str, str] = {}
    timezones: dict[str, tzinfo | None] = {}
    owners = {routine_parts(split_key(k)[1])[0] for k in inventory.keys_of("routine")}
    for name in sorted(owners | sources | {n for n, b in state.bots.items() if b.routines}):
        profile = live.get(name) or observe_profile(root, name, with_bot_chat=False, pool=pool, cache=cache)
        try:
            jobs[name] = tuple(read_jobs(profile.path, name, cache, pool) or ()) if profile.exists else ()
        except ControllerError as exc:
            errors[name] = str(exc)
        tz_name = _desired_timezone(state, name)
        if tz_name is None:
            tz_name = profile.config_value("timezone")[1] if profile.config is not None else None
        timezones[name] = zone(tz_name)
    return jobs, errors, timezones


def _desired_timezone(state: DesiredState, name: str) -> str | None:
    """The zone the bot's scheduler will use once applied: its own, else the install-wide one,
    which every bot inherits (core.planning.bots.bot_desired)."""
    if name not in state.bots:
        return None
    return state.bots[name].config.get("timezone") or state.install_config.get("timezone")


def zone(name: str | None) -> tzinfo | None:
    """The configured Hermes `timezone` (IANA name); None means the server's local time."""
    if not name:
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(str(name))
    except Exception:  # Hermes falls back to local time on a bad name, never crashes
        return None


# --- secrets --------------------------------------------------------------------------------------


def resolve_env(entries: Mapping[str, EnvEntry]) -> tuple[dict[str, str], str]:
    """The resolved .env values of one owner, and why one is missing ("" when none is)."""
    values: dict[str, str] = {}
    error = ""
    for key, entry in entries.items():
        try:
            values[key] = references.resolve(entry)
            # A value Hermes' .env cannot carry (a line break, a ${...}) fails its bot here, at
            # plan time, before any of that bot's files is written: never half a bot.
            envfile.check_entry(key, values[key])
        except SecretUnavailable as exc:
            error = f"env {key}: {exc}"
        except RefusedValue as exc:
            values.pop(key, None)
            error = f"env {key}: {exc}; change the value at its source"
    return values, error


# --- other fleets ---------------------------------------------------------------------------------


def _foreign(root: Path, fleet: str) -> tuple[dict[str, str], dict[str, str]]:
    objects: dict[str, str] = {}
    install: dict[str, str] = {}
    for other in inventory_file.all_fleets(root):
        if other == fleet:
            continue
        theirs = records.load(root, other)
        for key in theirs.objects:
            objects.setdefault(key, other)
        for bot in theirs.restored:  # a restored bot is theirs until it is back in their manifests
            objects.setdefault(bot_key(bot), other)
        for field in theirs.applied(INSTALL_KEY):
            install.setdefault(field, other)
    return objects, install


# --- the gateway ----------------------------------------------------------------------------------


def observe_rooms(root: Path, options: gw.GatewayOptions | None, *, seats: Sequence[Seat] = ()) -> GatewayView:
    """groups.capabilities, then every room (disbanded included), the peer routes of rooms with
    members on other machines (groups.state's driver_status), and for each bot of this machine
    seated in another machine's room, RoomLink as this gateway offers it. Never writes."""
    options = options or gw.GatewayOptions()
    try:
        with gw.open_session(root, options, writes=False) as session:
            caps = session.call("groups.capabilities")
            found: dict[str, dict[str, Any]] = {}
            offset: int | None = 0
            while offset is not None:
                page = session.call("groups.list", {"include_disbanded": True, "limit": ROOM_PAGE, "offset": offset})
                for room in page.get("rooms") or []:
                    if isinstance(room, dict) and isinstance(room.get("room_id"), str):
                        found[room["room_id"]] = room
                nxt = page.get("next_offset")
                offset = nxt if isinstance(nxt, int) and not isinstance(nxt, bool) and nxt > offset else None
            routes: dict[str, tuple[Mapping[str, Any], ...]] = {}
            for room_id, room in found.items():
                if room.get("disbanded_at") or not rooms.peer_members(room):
                    continue
                try:
                    status = session.call("groups.state", {"room_id": room_id}).get("driver_status")
                except GatewayRefused as exc:
                    if isinstance(exc, GatewayIncompatible):
                        raise
                    continue  # disbanded since it was listed: the plan sees it as listed
                if isinstance(status, dict) and isinstance(status.get("peer_routes"), list):
                    routes[room_id] = tuple(r for r in status["peer_routes"] if isinstance(r, dict))
            links: dict[str, Mapping[str, Any]] = {}
            for bot in sorted({seat.bot for seat in seats}):
                link = session.call("groups.capabilities", {"profile": bot}).get("room_link")
                links[bot] = link if isinstance(link, dict) else {}
            return GatewayView(
                origin=session.label,
                capabilities=caps,
                rooms=found,
                routes=routes,
                room_links=links,
                stray_profiles=_stray_profiles(root),
            )
    except GatewayIncompatible as exc:
        if exc.code == -32601 and exc.method == "groups.capabilities":
            return GatewayView(
                error="gateway too old: it has no groups.capabilities (Hermes 0.19 or older); update "
                "Hermes on the machine that runs this home's gateway (`hermes update`), then restart "
                "the gateway (`hermes gateway restart`)",
                error_code=Reason.GATEWAY_UNSUPPORTED,
            )
        return GatewayView(error=f"pending: gateway unusable: {exc}")
    except GatewayError as exc:
        return GatewayView(error=f"pending: gateway unreachable: {exc}")


def _stray_profiles(root: Path) -> tuple[str, ...]:
    """Folders under profiles/ that are no profile name (`.deleted`, a staging leftover)."""
    try:
        return tuple(sorted(p.name for p in HomeLayout(root).profiles.iterdir() if p.is_dir() and rooms.stray(p.name)))
    except OSError:
        return ()
