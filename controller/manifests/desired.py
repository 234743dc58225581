"""Desired state: validated manifests normalised into one value per managed object (pure).

Both manifest forms (one `Fleet` document, or one document per object) end up here as the same
`DesiredState`: defaults applied, references resolved to names, config flattened to dotted keys,
section ids fixed. Called by validation (to build) and by planning (to compare). Reads soul and
image files referenced by the manifests (already checked by validation); never touches Hermes.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.hermes import platforms
from controller.manifests.models import Avatar, Bot, BotDefaults, Peer, Room, Routine, SecretRef, Section
from controller.manifests.models.base import assemble

# Config subtrees compared and owned as a whole value (not leaf by leaf).
ATOMIC_PREFIXES = ("mcp_servers.",)


@dataclass(frozen=True)
class Origin:
    """Where an object was declared: for error messages and plan output."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class EnvEntry:
    """One `.env` key: a literal (non-secret) value or a reference resolved at apply time."""

    literal: str | None = None
    ref: SecretRef | None = None
    base_dir: str = "."  # for from_file relative paths

    @property
    def secret(self) -> bool:
        return self.ref is not None


@dataclass(frozen=True)
class DesiredBot:
    name: str
    origin: Origin
    title: str | None = None
    description: str | None = None
    display_name: str | None = None
    soul: str | None = None
    avatar: dict[str, Any] | None = None  # ui_meta keys: shape, color, imageKind, custom
    avatar_image: str | None = None  # path of the image file to publish as assets/avatar.<ext>
    hidden: bool | None = None
    pinned: bool | None = None
    section: tuple[str, str] | None = None  # (sectionId, sectionName)
    config: dict[str, Any] = field(default_factory=dict)  # dotted key -> value
    env: dict[str, EnvEntry] = field(default_factory=dict)
    routines: tuple[Routine, ...] = ()
    clone_from: str | None = None
    create_empty: bool = False
    host: str | None = None
    renamed_from: str | None = None  # the profile this bot was called before (docs/hermes/rename.md)
    labels: dict[str, str] = field(default_factory=dict)  # for -l selectors only: never written, not in the digest


@dataclass(frozen=True)
class Seat:
    """A bot of this machine's slice that is a member (`peer/bot`) of a room on another machine."""

    room: str
    room_host: str | None
    peer: str
    bot: str


@dataclass(frozen=True)
class DesiredWebhook:
    """A notification webhook; `url` is resolved like a secret (manifests.references), only when posting."""

    name: str
    url: EnvEntry
    format: str = "json"
    events: frozenset[str] | None = None  # None: every event
    timeout: float = 5.0


class _Digest:
    """`DesiredState.digest`: the one given, else `state_digest(state)` on first read.

    The digest is a JSON text of the whole state (17.6 MB at 10,000 bots, a third of building the
    state); `validate` never reads it unless it prints JSON, and a host's slice has a digest of
    its own (`for_host`), so it is made when it is first asked for, once."""

    def __get__(self, state: DesiredState | None, owner: type | None = None) -> str:
        if state is None:
            return ""  # the dataclass default: compute on first read
        value: str = state.__dict__["_digest"]
        if not value:
            value = state.__dict__["_digest"] = state_digest(state)
        return value

    def __set__(self, state: DesiredState, value: str) -> None:
        state.__dict__["_digest"] = value  # __init__ of the frozen dataclass sets it once


@dataclass(frozen=True)
class DesiredState:
    fleet: str
    bots: dict[str, DesiredBot]
    sections: dict[str, Section]
    rooms: dict[str, Room]
    peers: dict[str, Peer]
    install_config: dict[str, Any]  # the root profile's config.yaml keys (policy, peers, passthrough)
    install_env: dict[str, EnvEntry]  # the root profile's .env keys (peer keys)
    digest: _Digest = _Digest()  # read as a str: the state's digest (computed on first read when not given)
    seats: tuple[Seat, ...] = ()  # set by for_host: this slice's bots seated in other hosts' rooms
    notifications: tuple[DesiredWebhook, ...] = ()  # not part of the digest: they change nothing in the home
    # Install fields (`config:<key>`, `env:<KEY>`) written to the root profile only, never into the
    # bots: the accepting side of a peer (its API server), set by for_host.
    root_only: frozenset[str] = frozenset()
    # The machine this slice was cut for (for_host); None: the fleet names no host, the whole of it.
    host: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {
            "bots": len(self.bots),
            "routines": sum(len(b.routines) for b in self.bots.values()),
            "sections": len(self.sections),
            "rooms": len(self.rooms),
            "peers": len(self.peers),
        }


# --- config flattening ----------------------------------------------------------------------


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b.c': 1}} -> {'a.b.c': 1}; lists and atomic subtrees stay whole values."""
    out: dict[str, Any] = {}
    _flatten_into(out, value, prefix)
    return out


def _flatten_into(out: dict[str, Any], value: Any, prefix: str) -> None:
    # One dict for the whole walk (a dict per level, merged upwards, cost a third of validation's
    # config work at 10,000 bots); the same keys in the same order, the last write winning.
    if value == {} and not prefix:
        return  # `config: {}` sets nothing (not a key named "")
    if isinstance(value, dict) and value and not _is_atomic(prefix):
        for key, child in value.items():
            _flatten_into(out, child, f"{prefix}{key}." if prefix or key else key)
        return
    out[prefix.rstrip(".")] = value


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """{'a.b.c': 1} -> {'a': {'b': {'c': 1}}}: the inverse of `flatten`."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


@functools.lru_cache(maxsize=4096)
def _is_atomic(prefix: str) -> bool:
    # mcp_servers.<name>. is atomic; mcp_servers. itself is not.
    return any(prefix.startswith(p) and prefix.count(".") >= p.count(".") + 1 for p in ATOMIC_PREFIXES)


@functools.lru_cache(maxsize=4096)
def section_id(fleet: str, name: str) -> str:
    """A stable sectionId in Desktop's shape (`sec-<8>-<5>`, base36) derived from fleet + name."""
    digest = int.from_bytes(hashlib.sha256(f"{fleet}/{name}".encode()).digest()[:12], "big")
    chars = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    for _ in range(13):
        digest, rem = divmod(digest, 36)
        text += chars[rem]
    return f"sec-{text[:8]}-{text[8:]}"


def avatar_meta(avatar: Avatar) -> dict[str, Any]:
    """ui_meta hermes-bots keys for an avatar (docs/hermes/bot-mode.md#avatars)."""
    kind = avatar.resolved_kind
    if kind == "image":
        return {"imageKind": "photo", "custom": True}
    if kind == "geometric":
        return {"shape": avatar.shape, "color": avatar.color, "imageKind": "shape", "custom": True}
    shape = "blobatar"
    if avatar.silhouette:
        shape = f"blobatar:{avatar.seed or ''}:{avatar.silhouette}"
    elif avatar.seed:
        shape = f"blobatar:{avatar.seed}"
    return {"shape": shape, "imageKind": "shape", "custom": True}


def merged_with_defaults(bot: Bot, defaults: BotDefaults | None) -> Bot:
    """`defaults` fill fields a bot leaves unset; `env` and `config` merge per key (the bot wins)."""
    if defaults is None:
        return bot
    update: dict[str, Any] = {}
    for name in BotDefaults.model_fields:
        default_value = getattr(defaults, name)
        if default_value is None:
            continue
        own = getattr(bot, name)
        if own is None:
            update[name] = default_value
        elif name == "env":
            update[name] = {**default_value, **own}
        elif name == "config":
            update[name] = {**flatten(default_value), **flatten(own)}
    # What bot.model_copy(update=update) makes (defaults are valid values of the same fields),
    # without pydantic's copy protocol: it was a third of building the desired state.
    return assemble(Bot, {**bot.__dict__, **update}, bot.model_fields_set | update.keys()) if update else bot


def bot_config(bot: Bot) -> dict[str, Any]:
    """Every config.yaml key a bot manages, flattened: typed fields first, then the passthrough."""
    out: dict[str, Any] = {}
    if bot.model is not None:
        out.update(flatten(bot.model.model_dump(exclude_none=True), "model."))
    if bot.toolsets is not None:
        # Hermes picks tools per platform; the top-level `toolsets:` key picks nothing
        # (docs/hermes/files.md#toolsets), so the list is pinned on every platform.
        out.update(platforms.toolset_keys(list(bot.toolsets)))
    if bot.skills is not None:
        out.update(flatten(bot.skills.model_dump(exclude_none=True), "skills."))
    if bot.mcp_servers is not None:
        for name, server in bot.mcp_servers.items():
            out[f"mcp_servers.{name}"] = mcp_server_config(name, server.model_dump(exclude_none=True))
    if bot.tts is not None:
        out.update(flatten(bot.tts.model_dump(exclude_none=True), "tts."))
    if bot.checkpoints is not None:
        out.update(flatten(bot.checkpoints.model_dump(exclude_none=True), "checkpoints."))
    if bot.config:
        out.update(flatten(bot.config))
    return out


def mcp_env_key(server: str, header: str) -> str:
    """The .env key that carries a secret MCP header value."""
    clean = "".join(c if c.isalnum() else "_" for c in f"{server}_{header}").upper()
    return f"HERMES_FLEET_MCP_{clean}"


def mcp_server_config(name: str, server: dict[str, Any]) -> dict[str, Any]:
    """Secret references become `${VAR}` (Hermes expands them from .env at load time).

    Hermes reads only `enabled` (docs/hermes/files.md#mcp-servers): `disabled: true` is written as
    `enabled: false`, so the switch takes effect.
    """
    if "disabled" in server:
        disabled = server.pop("disabled")
        server.setdefault("enabled", not disabled)
    for block, keyer in (("env", lambda k: k), ("headers", lambda k: mcp_env_key(name, k))):
        if block in server:
            server[block] = {k: (f"${{{keyer(k)}}}" if isinstance(v, dict) else env_literal(v)) for k, v in server[block].items()}
    return server


def mcp_secret_env(bot: Bot, base_dir: str) -> dict[str, EnvEntry]:
    out: dict[str, EnvEntry] = {}
    for name, server in (bot.mcp_servers or {}).items():
        for key, value in (server.env or {}).items():
            if isinstance(value, SecretRef):
                out[key] = EnvEntry(ref=value, base_dir=base_dir)
        for key, value in (server.headers or {}).items():
            if isinstance(value, SecretRef):
                out[mcp_env_key(name, key)] = EnvEntry(ref=value, base_dir=base_dir)
    return out


def env_literal(value: Any) -> str:
    """The .env text of a literal value (true/false for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def env_entries(env: dict[str, Any] | None, base_dir: str) -> dict[str, EnvEntry]:
    out: dict[str, EnvEntry] = {}
    for key, value in (env or {}).items():
        if isinstance(value, SecretRef):
            out[key] = EnvEntry(ref=value, base_dir=base_dir)
        else:
            out[key] = EnvEntry(literal=env_literal(value), base_dir=base_dir)
    return out


def compute_digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, default=_json_default, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _json_default(value: Any) -> Any:
    kind = type(value)  # the commonest first: neither has model_dump, and EnvEntry comes before dataclasses
    if kind is EnvEntry:
        return {"literal": value.literal, "ref": value.ref.model_dump(exclude_none=True) if value.ref else None}
    if kind is DesiredBot:
        return {k: getattr(value, k) for k in value.__dataclass_fields__ if k not in ("origin", "labels")}
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, EnvEntry):
        return {"literal": value.literal, "ref": value.ref.model_dump(exclude_none=True) if value.ref else None}
    if isinstance(value, Origin):
        return None
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__ if k != "origin"}
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, frozenset):
        return sorted(value)
    raise TypeError(type(value))


def state_digest(state: DesiredState) -> str:
    """The digest of everything `state` writes: a change to it is a change this home must apply.

    Computed over the state as given, so a host slice (`for_host`) gets a digest of its own slice
    only: a change to another machine's bots, rooms or peers leaves it as it was. Avatar images are
    covered by their content (a path alone would miss an edited image); secret values never are.
    """
    # Every field but the digest, the notifications (they change nothing in the home) and the host
    # (the slice's content already says what lives there); fields
    # left empty are left out, so adding one keeps old digests.
    payload: dict[str, Any] = {
        name: value
        for name in state.__dataclass_fields__
        if name not in ("digest", "notifications", "host") and (value := getattr(state, name)) not in (None, (), frozenset())
    }
    images = {name: _file_sha256(bot.avatar_image) for name, bot in sorted(state.bots.items()) if bot.avatar_image}
    if images:
        payload["avatar_images"] = images
    return compute_digest(payload)


def _file_sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def uses_hosts(state: DesiredState) -> bool:
    hosts = [b.host for b in state.bots.values()] + [r.host for r in state.rooms.values()]
    return any(hosts) or any(p.host or p.accept for p in state.peers.values())


def url_port(url: str) -> int | None:
    """The explicit port of an http(s) URL, or None (also for a URL that does not parse)."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).port
    except ValueError:
        return None


def _registers(peer: Peer, host: str) -> bool:
    """`host` registers the peer (bot_peers + its key): its own host, else every machine but the accepting one."""
    if peer.host is not None:
        return peer.host == host
    return peer.accept is None or peer.accept.host != host


def accept_side(peer: Peer, key: EnvEntry) -> tuple[dict[str, Any], dict[str, EnvEntry]]:
    """What the accepting machine's root profile needs for a peer to reach it: Hermes' API server
    on the peer URL's port with the peer's key (docs/hermes/peers.md#accepting-side), and one
    gateway for every bot so `peer/<bot>` reaches that bot (docs/hermes/peers.md#profiles)."""
    accept = peer.accept
    assert accept is not None
    port = accept.port or url_port(peer.url)
    env = {
        "API_SERVER_ENABLED": EnvEntry(literal="true"),
        "API_SERVER_KEY": key,
        "API_SERVER_HOST": EnvEntry(literal=accept.bind),
        "API_SERVER_PORT": EnvEntry(literal=str(port)),
    }
    config: dict[str, Any] = {"gateway.multiplex_profiles": True} if accept.profiles else {}
    return config, env


def for_host(state: DesiredState, host: str | None) -> DesiredState:
    """The slice of the fleet that lives on `host` (objects with no host live everywhere).

    The slice holds only what this machine writes: its bots (and the sections they use), its
    rooms, the peers it registers, and the install-wide settings that apply to it. Its digest is
    the slice's own (`state_digest`), so each machine's applied state depends on its slice alone.
    """
    if host is None or not uses_hosts(state):
        return state
    bots = {n: b for n, b in state.bots.items() if b.host in (None, host)}
    rooms = {n: r for n, r in state.rooms.items() if r.host in (None, host)}
    peers = {n: p for n, p in state.peers.items() if _registers(p, host)}
    gone = set(state.peers) - set(peers)
    install_config = {
        k: v for k, v in state.install_config.items() if not (k.startswith("bot_peers.") and k.split(".")[1] in gone)
    }
    from controller.hermes.naming import peer_env_key

    dropped_keys = {peer_env_key(p) for p in gone}
    install_env = {k: v for k, v in state.install_env.items() if k not in dropped_keys}
    root_only: set[str] = set()
    for peer in state.peers.values():
        if peer.accept is not None and peer.accept.host == host and peer_env_key(peer.name) in state.install_env:
            config, env = accept_side(peer, state.install_env[peer_env_key(peer.name)])
            config = {k: v for k, v in config.items() if k not in install_config}  # an explicit policy value wins
            install_config.update(config)
            install_env.update(env)
            root_only |= {f"config:{k}" for k in config} | {f"env:{k}" for k in env}
    used_sections = {b.section[1] for b in bots.values() if b.section is not None}
    seats = tuple(
        Seat(r.name, r.host, m.partition("/")[0], m.partition("/")[2])
        for r in state.rooms.values()
        if r.name not in rooms
        for m in r.members
        if "/" in m and m.partition("/")[2] in bots
    )
    sliced = DesiredState(
        fleet=state.fleet,
        bots=bots,
        sections={n: s for n, s in state.sections.items() if n in used_sections},
        rooms=rooms,
        peers=peers,
        install_config=install_config,
        install_env=install_env,
        seats=seats,
        notifications=state.notifications,
        root_only=frozenset(root_only),
        host=host,
    )
    return sliced  # its digest is its own: computed from the slice on first read
