"""Export: write manifests for a Hermes home that was built by hand (Desktop or CLI).

The inverse of desired.py + applying.py: each profile's config.yaml, .env, SOUL.md,
profile.yaml (Bot Mode record), avatar and Bot Mode routines become a Bot; the root profile's
Bot Mode policy, peers and other config become install-wide settings. Credentials never leave the
home: whatever the masking rule of controller/redact.py would hide (a credential key's value, an MCP
server's env and headers, a credential in MCP args, a token-shaped text) becomes a `from_env`
reference (or a `${NAME}` in config.yaml plus a bot `env` reference), and the variables to set are
listed; what cannot be a reference (a URL's credentials, a token inside a title or a prompt) is
written masked, with a warning. Read-only on the home, and only inside each profile: a link that
leads out of it (a SOUL.md symlink, an avatar link) is skipped with a warning, as plan refuses it.
Files are written without following a link (`fsio.write_no_follow`). Called by `hermes-fleet export`.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import redact
from controller.adapters import configfile, cronstore, envfile, fsio, profilemeta
from controller.adapters import inventory as inventory_file
from controller.adapters.home import ProfileLayout, check_inside, profile_dir, profile_fence, resolve_root
from controller.core import jobs
from controller.core.inventory import INSTALL_KEY, split_key
from controller.engine import observing, records
from controller.errors import ContainmentError, ExitCode, HermesStateError, UsageError
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE, defaults, naming, platforms
from controller.manifests.desired import flatten, unflatten
from controller.manifests.models.bots import BLOB_SILHOUETTES, GEOMETRIC_SHAPES

SCHEMA_FILE = Path("schemas") / "hermes-fleet.json"  # where `init` puts it, as this repository does
BOT_CONFIG_TYPED = ("model", "toolsets", "skills", "mcp_servers", "tts", "checkpoints")
INSTALL_TYPED = {
    "gateway.bot_loop_guard": ("gateway", "bot_loop_guard"),
    "agent.bot_mode_protocol": ("gateway", "bot_mode_protocol"),
    "auxiliary.group_router": ("gateway", "group_router"),
}
HERMES_OWNED_KEYS = ("_config_version",)  # Hermes' own bookkeeping, never a user setting
_TAG = re.compile(r"^\[bot:([a-z0-9][a-z0-9_-]*)\]\s*(.*)$", re.S | re.I)


@dataclass
class Export:
    fleet: str
    bots: list[dict[str, Any]] = field(default_factory=list)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)  # sectionId -> section
    peers: list[dict[str, Any]] = field(default_factory=list)
    rooms: list[dict[str, Any]] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
    souls: dict[str, str] = field(default_factory=dict)  # bot -> SOUL.md text
    avatars: dict[str, Path] = field(default_factory=dict)  # bot -> image file in the home
    warnings: list[str] = field(default_factory=list)
    # The root's config leaves and .env keys: a bot holding the same value inherits it (apply writes
    # install-wide settings into every bot), so it is exported once, install-wide.
    install: tuple[dict[str, Any], dict[str, str]] = field(default_factory=lambda: ({}, {}))
    # Config keys a fleet of this home applied, per profile: kept even when they equal Hermes'
    # default (someone declared them); other default-valued keys are Hermes' and left out.
    declared: dict[str, frozenset[str]] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)  # from_env name -> where the live value was

    def needs(self, name: str, where: str) -> dict[str, str]:
        """A `from_env` reference to `name`, listed among the variables to set before apply."""
        self.variables.setdefault(name, where)
        return {"from_env": name}


def _declared_keys(root: Path) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for fleet in inventory_file.all_fleets(root):
        for key, entry in records.load(root, fleet).objects.items():
            kind, name = split_key(key)
            profile = DEFAULT_PROFILE if key == INSTALL_KEY else name
            if kind in ("bot", "install"):
                fields = entry.get("applied", {})
                out.setdefault(profile, set()).update(f[7:] for f in fields if f.startswith("config:"))
    return {k: frozenset(v) for k, v in out.items()}


def _install_values(root: Path, keep: frozenset[str]) -> tuple[dict[str, Any], dict[str, str]]:
    files = ProfileLayout(root)
    data = defaults.without_defaults(configfile.ConfigDoc.load(files.config).as_dict(), keep=keep)
    config = flatten({k: v for k, v in data.items() if k not in HERMES_OWNED_KEYS})
    return config, envfile.read_env(files.env).as_dict()


def _not_inherited(data: dict[str, Any], install: dict[str, Any]) -> dict[str, Any]:
    """A bot's config without the leaves it holds only because the install-wide settings set them."""
    kept = {k: v for k, v in flatten(data).items() if not (k in install and install[k] == v)}
    return unflatten(kept)


# --- reading the home ----------------------------------------------------------------------------


def export_home(root: Path, fleet: str, bots: list[str] | None = None, *, gateway: Any = None) -> Export:
    out = Export(fleet=fleet, declared=_declared_keys(root))
    out.install = _install_values(root, out.declared.get(DEFAULT_PROFILE, frozenset()))
    names = bots if bots else _all_bots(root)
    for name in names:
        if name != DEFAULT_PROFILE and not profile_dir(root, name).is_dir():
            raise UsageError(f"profile {name!r} does not exist in {root}", hint="check --bot")
        out.bots.append(_export_bot(root, name, out))
    _export_install(root, out)
    if gateway is not None:
        _export_rooms(root, gateway, set(names), out)
    return out


def _export_rooms(root: Path, options: Any, bots: set[str], out: Export) -> None:
    """Live rooms whose local members are all exported bots (read-only: groups.list)."""
    from controller.core import rooms

    obs = observing.observe_rooms(root, options)
    if obs.error:
        out.warnings.append(f"rooms were not exported: {obs.error}")
        return
    for room in sorted(obs.rooms.values(), key=lambda r: str(r.get("name"))):
        if room.get("disbanded_at"):
            continue
        name = str(room.get("name") or room.get("room_id"))
        local = sorted(rooms.local_members(room))
        remote = rooms.peer_members(room)
        if remote:
            out.warnings.append(
                f"room {name!r}: it has members on other machines ({', '.join(remote)}); "
                "add them as peer/profile members by hand, after declaring the peer"
            )
        missing = [m for m in local if m not in bots]
        if missing:
            out.warnings.append(f"room {name!r} was left out: its members {missing} are not exported")
            continue
        entry: dict[str, Any] = {"name": name, "members": local}
        who = rooms.live_who_answers(room)
        if who != "everyone" and not who.startswith("("):
            entry["who_answers"] = who
        out.rooms.append(entry)


def _all_bots(root: Path) -> list[str]:
    from controller.adapters import profiles

    names = profiles.live_profiles(root)
    root_meta = profilemeta.ProfileMeta.load(ProfileLayout(root).meta)
    if root_meta.bot_record() is not None:
        names.insert(0, DEFAULT_PROFILE)
    return names


def _export_bot(root: Path, name: str, out: Export) -> dict[str, Any]:
    path = profile_dir(root, name)
    files = ProfileLayout(path)
    inside = _Fence(root, name, out)
    bot: dict[str, Any] = {"name": name}
    meta = _profile_meta(files.meta, inside)
    record = meta.bot_record() or {}
    if record.get("title"):
        bot["title"] = record["title"]
    if meta.description:
        bot["description"] = meta.description
    if meta.display_name:
        bot["display_name"] = meta.display_name
    if name != DEFAULT_PROFILE:
        refs: dict[str, Any] = {}
        if inside(files.config):
            doc = configfile.ConfigDoc.load(files.config)
            bot.update(_bot_config(doc, name, out, out.declared.get(name, frozenset()), refs))
        root_env = out.install[1]
        own_env = envfile.read_env(files.env) if inside(files.env) else envfile.EnvFile()
        env = _env_refs(own_env, skip={k for k, v in own_env.as_dict().items() if root_env.get(k) == v}, where=name, out=out)
        env.update(refs)
        if env:
            bot["env"] = env
    soul = files.soul
    if soul.is_file() and inside(soul):
        out.souls[name] = _masked_text(_read_soul(soul), f"{name}: SOUL.md", out)
    avatar = _avatar(path, record, name, out, inside)
    if avatar:
        bot["avatar"] = avatar
    for key in ("hidden", "pinned"):
        if isinstance(record.get(key), bool):
            bot[key] = record[key]
    if record.get("sectionId") and record.get("sectionName"):
        sid, sname = str(record["sectionId"]), _masked_text(str(record["sectionName"]), f"{name}: section", out)
        out.sections.setdefault(sid, {"name": sname, "id": sid})
        bot["section"] = out.sections[sid]["name"]
    routines = _routines(path, name, out) if inside(files.jobs) else []
    if routines:
        bot["routines"] = routines
    masked: dict[str, Any] = _masked_everywhere(bot, name, out)
    return masked


class _Fence:
    """Whether a file of a profile may be read: a link that leads out of the profile (a SOUL.md
    symlink to ~/.ssh/id_rsa) is skipped with a warning, by the rule plan refuses it with."""

    def __init__(self, root: Path, name: str, out: Export) -> None:
        self.name, self.out = name, out
        self.own, self.foreign = profile_fence(root, name)

    def __call__(self, path: Path) -> bool:
        if not path.is_symlink():
            return True
        try:
            check_inside(path, self.own, self.foreign, owner=f"profile {self.name!r}")
        except ContainmentError:
            self.out.warnings.append(
                f"{self.name}: {path.name} is a link out of the profile and was not read (plan refuses it too); "
                "replace the link with a regular file"
            )
            return False
        return True


def _profile_meta(path: Path, inside: _Fence) -> profilemeta.ProfileMeta:
    if inside(path):
        return profilemeta.ProfileMeta.load(path)
    return profilemeta.ProfileMeta(configfile.ConfigDoc.parse("", source=str(path), exists=False), path=path, text=None)


MAX_SOUL_BYTES = 1024 * 1024  # a SOUL is a prompt: a megabyte is far more than any model reads


def _read_soul(path: Path) -> str:
    data = fsio.read_bounded(path, MAX_SOUL_BYTES)
    if data is None:
        raise HermesStateError(f"{path} is larger than {MAX_SOUL_BYTES} bytes", hint="shorten it or remove it")
    return data.decode("utf-8", "replace")


def _masked_text(text: str, where: str, out: Export) -> str:
    shown = redact.mask_text(text)
    if shown != text:
        out.warnings.append(f"{where} holds a credential (a token or a URL's) and was written masked (***): fix it by hand")
    return shown


def _masked_everywhere(value: Any, where: str, out: Export) -> Any:
    """Every text of an exported object with what the masking rule hides masked, and a warning:
    the last line of defence for what has no reference form (a token in a title or a prompt)."""
    if isinstance(value, str):
        return _masked_text(value, where, out)
    if isinstance(value, dict):
        return {k: _masked_everywhere(v, f"{where}.{k}", out) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_everywhere(v, where, out) for v in value]
    return value


def _bot_config(
    doc: configfile.ConfigDoc, bot: str, out: Export, keep: frozenset[str] = frozenset(), refs: dict[str, Any] | None = None
) -> dict[str, Any]:
    refs = {} if refs is None else refs
    data = _not_inherited(defaults.without_defaults(doc.as_dict(), keep=keep), out.install[0])
    result: dict[str, Any] = {}
    data = _secure_config(data, f"{bot}: config.yaml", out, refs)
    model = data.get("model")
    if isinstance(model, dict):
        pin = {k: model[k] for k in ("provider", "default", "base_url") if model.get(k)}
        if pin:
            result["model"] = pin
    elif isinstance(model, str) and model:
        result["model"] = {"default": model}
    toolsets = _toolsets(data, bot, out)
    if toolsets is not None:
        result["toolsets"] = toolsets
    skills = data.get("skills")
    if isinstance(skills, dict):
        picked = {k: skills[k] for k in ("disabled", "platform_disabled") if skills.get(k) is not None}
        if picked:
            result["skills"] = picked
    if isinstance(data.get("mcp_servers"), dict) and data["mcp_servers"]:
        result["mcp_servers"] = {
            k: _mcp(k, v, f"{bot}: mcp_servers.{k}", out, refs) for k, v in data["mcp_servers"].items() if isinstance(v, dict)
        }
    for key in ("tts", "checkpoints"):
        if isinstance(data.get(key), dict) and data[key]:
            result[key] = data[key]
    if "skills" in result and isinstance(skills, dict):
        rest = {k: v for k, v in skills.items() if k not in ("disabled", "platform_disabled")}
        if rest:
            result.setdefault("config", {})["skills"] = rest  # other skills.* keys stay passthrough
    rest = {k: v for k, v in data.items() if k not in BOT_CONFIG_TYPED and k not in HERMES_OWNED_KEYS and k != "bot_peers"}
    if rest:
        result.setdefault("config", {}).update(rest)
    if "config" in result and "skills" in result["config"]:
        result["config"] = {**result["config"], **{f"skills.{k}": v for k, v in result["config"].pop("skills").items()}}
    return result


def _toolsets(data: dict[str, Any], bot: str, out: Export) -> list[Any] | None:
    """`toolsets:` when the same list is pinned on every platform (what apply writes); a partial
    `platform_toolsets` stays passthrough config. The top-level `toolsets:` key picks no tools in
    Hermes (docs/hermes/files.md#toolsets), so it is left out with a warning."""
    legacy = data.pop("toolsets", None)
    if legacy is not None:
        out.warnings.append(f"{bot}: config.yaml toolsets: {legacy} picks no tools in Hermes and was left out")
    pinned = data.get(platforms.TOOLSETS_KEY)
    if not isinstance(pinned, dict):
        return None
    lists = [pinned.get(p) for p in platforms.PLATFORMS_0_19]
    if all(isinstance(x, list) for x in lists) and all(x == lists[0] for x in lists):
        rest = {k: v for k, v in pinned.items() if k not in platforms.PLATFORMS_0_19}
        if rest:
            data[platforms.TOOLSETS_KEY] = rest
        else:
            del data[platforms.TOOLSETS_KEY]
        return lists[0]
    return None


def _mcp(name: str, server: dict[str, Any], where: str, out: Export, refs: dict[str, Any]) -> dict[str, Any]:
    """An MCP server: every env and header value a reference (the masking rule hides them all), a
    credential in `args` a `${NAME}` that Hermes expands from the bot's `.env` (load_config expands
    `${...}` in every string of config.yaml: docs/hermes/files.md#config-loading)."""
    server = dict(server)
    for block in ("env", "headers"):
        values = server.get(block)
        if isinstance(values, dict):
            server[block] = {key: _mcp_value(name, block, str(key), value, where, out) for key, value in values.items()}
    if isinstance(server.get("args"), list):
        server["args"] = _mcp_args(name, server["args"], where, out, refs)
    if isinstance(server.get("url"), str):
        server["url"] = _masked_text(server["url"], f"{where}.url", out)
    allowed = {
        "command",
        "args",
        "env",
        "url",
        "headers",
        "transport",
        "timeout",
        "connect_timeout",
        "enabled",
        "disabled",
        "tools",
    }
    dropped = sorted(set(server) - allowed)
    if dropped:
        out.warnings.append(f"{where}: keys {dropped} have no manifest field and were left out")
    return {k: v for k, v in server.items() if k in allowed}


def _mcp_value(server: str, block: str, key: str, value: Any, where: str, out: Export) -> Any:
    if value in (None, "") or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return {"from_env": value[2:-1]}
    var = _env_name(key if block == "env" else f"{server}_{key}")
    return out.needs(var, f"{where}.{block}.{key}")


def _mcp_args(server: str, args: list[Any], where: str, out: Export, refs: dict[str, Any]) -> list[Any]:
    kept: list[Any] = []
    flag = ""
    for item, shown in zip(args, redact.mask_args(args), strict=True):
        if shown == item or not isinstance(item, str):
            kept.append(item)
        elif isinstance(shown, redact.Withheld) or shown.endswith("=" + redact.MASK):
            prefix, eq, _ = item.partition("=") if not isinstance(shown, redact.Withheld) else ("", "", "")
            var = _env_name(f"{server}_ARG_{(prefix or flag).lstrip('-') or len(kept)}")
            refs[var] = out.needs(var, f"{where}.args")
            kept.append(f"{prefix}{eq}${{{var}}}")
        else:
            kept.append(_masked_text(item, f"{where}.args", out))
        flag = item if isinstance(item, str) and item.startswith("-") else ""
    return kept


def _env_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", key).upper()


def _secure_config(
    data: dict[str, Any], where: str, out: Export, refs: dict[str, Any] | None, prefix: str = ""
) -> dict[str, Any]:
    """Config leaves the masking rule hides: a credential key's value becomes `${NAME}` plus a bot
    `env` reference in `refs` (left out, with a warning, where there is no `env`: install-wide);
    a URL's credential or a token inside another value is written masked, with a warning."""
    kept: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and not dotted.startswith("mcp_servers."):
            inner = _secure_config(value, where, out, refs, dotted + ".")
            if inner or not value:
                kept[key] = inner
        elif dotted.startswith("mcp_servers.") or redact.masked(value, dotted) == value:
            kept[key] = value  # nothing to hide (MCP servers: `_mcp`)
        elif not redact.is_credential_key(str(key)):
            kept[key] = _masked_everywhere(value, f"{where}: {dotted}", out)
        elif refs is None or not isinstance(value, str | int | float):
            out.warnings.append(f"{where}: {dotted} holds a secret and was left out (move it to .env)")
        else:
            var = _env_name(dotted)
            refs[var] = out.needs(var, f"{where}: {dotted}")
            kept[key] = f"${{{var}}}"
    return kept


def _env_refs(env: envfile.EnvFile, skip: set[str], *, where: str = "", out: Export | None = None) -> dict[str, Any]:
    refs: dict[str, Any] = {}
    for key in env.keys():  # noqa: SIM118 - EnvFile is not a dict
        if key in skip:
            continue
        value = env.get(key) or ""
        secret = naming.is_secret_key(key) or redact.masked(value, key) != value
        refs[key] = (out.needs(key, f"{where}: .env") if out else {"from_env": key}) if secret else value
    return refs


def _avatar(path: Path, record: dict[str, Any], bot: str, out: Export, inside: Any = None) -> dict[str, Any] | None:
    if record.get("imageKind") == "photo":
        for ext in AVATAR_EXTENSIONS:
            image = ProfileLayout(path).avatar(ext)
            if image.is_file() and (inside is None or inside(image)):
                out.avatars[bot] = image
                return {"kind": "image", "image": f"avatars/{bot}.{ext}"}
    shape = record.get("shape")
    if not isinstance(shape, str) or not record.get("custom"):
        return None  # Desktop's defaults: nothing the user chose
    if shape.startswith("blobatar"):
        parts = [*shape.split(":"), "", ""][1:3]
        avatar: dict[str, Any] = {"kind": "blob"}
        if parts[0]:
            avatar["seed"] = parts[0]
        if parts[1] in BLOB_SILHOUETTES:
            avatar["silhouette"] = parts[1]
        return avatar
    if shape in GEOMETRIC_SHAPES:
        avatar = {"kind": "geometric", "shape": shape}
        if isinstance(record.get("color"), str):
            avatar["color"] = record["color"]
        return avatar
    out.warnings.append(f"{bot}: avatar shape {shape!r} has no manifest form and was left out")
    return None


def _routines(path: Path, bot: str, out: Export) -> list[dict[str, Any]]:
    jobs = cronstore.read_jobs(path) or []
    routines = []
    for job in jobs:
        match = _TAG.match(str(job.get("name") or ""))
        if not match or match.group(1).lower() != bot:
            continue
        routine = _routine(job, match.group(2).strip(), bot, out)
        if routine:
            routines.append(routine)
    untagged = [j for j in jobs if not _TAG.match(str(j.get("name") or ""))]
    if untagged:
        out.warnings.append(
            f"{bot}: {len(untagged)} cron job(s) without a [bot:{bot}] tag are not Bot Mode routines and were left out"
        )
    return routines


def _routine(job: dict[str, Any], title: str, bot: str, out: Export) -> dict[str, Any] | None:
    schedule = v if isinstance(v := job.get("schedule"), dict) else {}
    kind = schedule.get("kind")
    if kind == "cron":
        text = schedule.get("expr")
    elif kind == "interval":
        text = f"every {schedule.get('minutes')}m"
    elif kind == "once":
        text = schedule.get("run_at")
    else:
        text = None
    if not text or not title:
        out.warnings.append(f"{bot}: cron job {job.get('id')} has no usable schedule or title and was left out")
        return None
    routine: dict[str, Any] = {"name": title, "schedule": str(text)}
    prompt = jobs.instruction_of(str(job.get("prompt") or ""))
    if prompt:
        routine["prompt"] = prompt
    if job.get("enabled") is False or job.get("state") == "paused":
        routine["paused"] = True
        if job.get("paused_reason"):
            routine["paused_reason"] = job["paused_reason"]
    for src, dst in (
        ("skills", "skills"),
        ("model", "model"),
        ("provider", "provider"),
        ("base_url", "base_url"),
        ("enabled_toolsets", "toolsets"),
        ("workdir", "workdir"),
        ("script", "script"),
    ):
        if job.get(src):
            routine[dst] = job[src]
    if context := jobs.manifest_context_from(job):
        routine["context_from"] = context
    if job.get("no_agent"):
        routine["no_agent"] = True
    if job.get("deliver") and job["deliver"] != "local":
        routine["deliver"] = job["deliver"]
    times = (job.get("repeat") or {}).get("times") if isinstance(job.get("repeat"), dict) else None
    if times and not (kind == "once" and times == 1):
        routine["repeat"] = times
    return routine


def _export_install(root: Path, out: Export) -> None:
    files = ProfileLayout(root)
    doc = configfile.ConfigDoc.load(files.config)
    data = defaults.without_defaults(doc.as_dict(), keep=out.declared.get(DEFAULT_PROFILE, frozenset()))
    env = envfile.read_env(files.env)
    peer_keys = set()
    for name, entry in (data.get("bot_peers") or {}).items():
        if not isinstance(entry, dict) or not entry.get("url"):
            continue
        peer: dict[str, Any] = {"name": name, "url": entry["url"]}
        key = naming.peer_env_key(name)
        if env.get(key) is not None:
            peer["key"] = {"from_env": key}
            peer_keys.add(key)
        if entry.get("note"):
            peer["note"] = entry["note"]
        out.peers.append(peer)
    gateway: dict[str, Any] = {}
    for dotted, (_, field_name) in INSTALL_TYPED.items():
        present, value = doc.get(dotted)
        if present and value is not None:
            gateway[field_name] = value
    if gateway:
        out.policy["gateway"] = gateway
    if isinstance(data.get("checkpoints"), dict) and data["checkpoints"]:
        out.policy["checkpoints"] = data["checkpoints"]
    rest = {k: v for k, v in data.items() if k not in ("bot_peers", "checkpoints", *HERMES_OWNED_KEYS)}
    for dotted in INSTALL_TYPED:
        top, _, leaf = dotted.partition(".")
        if isinstance(rest.get(top), dict):
            rest[top] = {k: v for k, v in rest[top].items() if k != leaf}
            if not rest[top]:
                del rest[top]
    rest = _secure_config(rest, "root config.yaml", out, None)
    if rest:
        out.policy["config"] = rest
    leftover = [k for k in env.keys() if k not in peer_keys]  # noqa: SIM118 - EnvFile is not a dict
    if leftover:
        out.warnings.append(
            f"root .env keys {leftover} are not exported (install-wide .env keys have no manifest field; peers' keys are)"
        )


# --- writing manifests ---------------------------------------------------------------------------


def _dump(value: Any) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    def literal(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: literal(v) for k, v in node.items()}
        if isinstance(node, list):
            return [literal(v) for v in node]
        if isinstance(node, str) and "\n" in node.rstrip("\n"):
            return LiteralScalarString(node)
        return node

    value = literal(value)
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(value, buffer)
    return buffer.getvalue()


def _bot_with_soul(bot: dict[str, Any], ex: Export, souls_dir: str | None) -> dict[str, Any]:
    soul = ex.souls.get(bot["name"])
    if soul is None:
        return bot
    bot = dict(bot)
    bot[("soul_file" if souls_dir else "soul")] = f"{souls_dir}/{bot['name']}.md" if souls_dir else soul
    return bot


def find_schema(folder: Path) -> Path | None:
    """The nearest `schemas/hermes-fleet.json` in `folder` or a folder above it (a repository made by
    `hermes-fleet init`, or a clone of hermes-fleet), for the editor's `$schema` reference."""
    for candidate in (folder.resolve(), *folder.resolve().parents):
        if (candidate / SCHEMA_FILE).is_file():
            return candidate / SCHEMA_FILE
    return None


def schema_line(schema: Path | None, folder: Path) -> str:
    """The yaml-language-server modeline for a file in `folder`: a relative path that resolves, or nothing."""
    if schema is None:
        return ""
    return f"# yaml-language-server: $schema={os.path.relpath(schema, folder.resolve())}\n"


def render_single(ex: Export, schema_ref: str = "") -> str:
    spec: dict[str, Any] = {}
    if ex.sections:
        spec["sections"] = list(ex.sections.values())
    spec["bots"] = [_bot_with_soul(b, ex, None) for b in ex.bots]
    if ex.rooms:
        spec["rooms"] = ex.rooms
    if ex.peers:
        spec["peers"] = ex.peers
    spec.update(ex.policy)
    doc = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": ex.fleet}, "spec": spec}
    return schema_ref + _dump(doc)


def write_split(ex: Export, folder: Path, schema: Path | None = None) -> list[Path]:
    """A folder per kind: fleet.yaml (policy), sections.yaml, peers.yaml, bots/<bot>.yaml with
    bots/souls/ and bots/avatars/ beside them (referenced files must sit inside a manifest's folder)."""
    written: list[Path] = []
    fsio.make_dirs(folder)

    def put(rel: str, docs: list[dict[str, Any]]) -> None:
        text = schema_line(schema, (folder / rel).parent) + "---\n".join(_dump(d) for d in docs)
        written.append(fsio.write_no_follow(folder, rel, text.encode("utf-8")))

    put(
        "fleet.yaml",
        [{"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": ex.fleet}, "spec": dict(ex.policy)}],
    )
    meta = {"fleet": ex.fleet}
    if ex.sections:
        put(
            "sections.yaml",
            [
                {
                    "apiVersion": "hermes-fleet/v1",
                    "kind": "Section",
                    "metadata": {"name": s["name"], **meta},
                    "spec": {"id": s["id"]},
                }
                for s in ex.sections.values()
            ],
        )
    if ex.rooms:
        put(
            "rooms.yaml",
            [
                {
                    "apiVersion": "hermes-fleet/v1",
                    "kind": "Room",
                    "metadata": {"name": r["name"], **meta},
                    "spec": {k: v for k, v in r.items() if k != "name"},
                }
                for r in ex.rooms
            ],
        )
    if ex.peers:
        put(
            "peers.yaml",
            [
                {
                    "apiVersion": "hermes-fleet/v1",
                    "kind": "Peer",
                    "metadata": {"name": p["name"], **meta},
                    "spec": {k: v for k, v in p.items() if k != "name"},
                }
                for p in ex.peers
            ],
        )
    for bot in ex.bots:
        body = _bot_with_soul(bot, ex, "souls")
        routines = body.pop("routines", [])
        docs = [
            {
                "apiVersion": "hermes-fleet/v1",
                "kind": "Bot",
                "metadata": {"name": bot["name"], **meta},
                "spec": {k: v for k, v in body.items() if k != "name"},
            }
        ]
        docs += [
            {
                "apiVersion": "hermes-fleet/v1",
                "kind": "Routine",
                "metadata": {"name": r["name"], **meta},
                "spec": {"bot": bot["name"], **{k: v for k, v in r.items() if k != "name"}},
            }
            for r in routines
        ]
        put(f"bots/{bot['name']}.yaml", docs)
    for name, text in ex.souls.items():
        written.append(fsio.write_no_follow(folder, f"bots/souls/{name}.md", text.encode("utf-8")))
    written += _copy_avatars(ex, folder, "bots/")
    return written


def _copy_avatars(ex: Export, folder: Path, under: str = "") -> list[Path]:
    written = []
    for bot, image in ex.avatars.items():
        data = fsio.read_bounded(image, MAX_AVATAR_BYTES)
        if data is None:
            ex.warnings.append(f"{bot}: {image} is larger than {MAX_AVATAR_BYTES} bytes and was not exported")
            continue
        written.append(fsio.write_no_follow(folder, f"{under}avatars/{bot}{image.suffix}", data))
    return written


MAX_AVATAR_BYTES = 16 * 1024 * 1024


def default_fleet(root: Path) -> str:
    """The fleet name when --fleet is not given: the home's one owner, else `exported`.

    A home managed by several fleets has no good default (the export would conflict with each of
    them), so that is a usage error that names them.
    """
    from controller.adapters import inventory

    owners = inventory.all_fleets(root)
    if len(owners) > 1:
        raise UsageError(
            f"{root} is managed by {len(owners)} fleets ({', '.join(owners)}), so the export has no default fleet name",
            hint="pass --fleet NAME (and --bot NAME for that fleet's bots)",
        )
    return owners[0] if owners else "exported"


def cmd_export(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    if not root.is_dir():
        raise UsageError(f"no Hermes home at {root}", hint="pass --home DIR")
    fleet = args.fleet if args.fleet is not None else default_fleet(root)  # an empty --fleet is a bad name
    if naming.profile_name_problem(fleet):
        raise UsageError(f"invalid fleet name {fleet!r}", hint="use ^[a-z0-9][a-z0-9_-]{0,63}$")
    gateway = None
    if not args.no_rooms:
        from controller.adapters import gateway as gw

        gateway = gw.GatewayOptions(url=args.gateway, token_env=args.gateway_token_env, timeout=args.gateway_timeout)
    ex = export_home(root, fleet, args.bots, gateway=gateway)
    to_file = args.split or (args.output if args.output and args.output != "-" else None)
    where = Path(args.split) if args.split else (Path(to_file).parent if to_file else Path.cwd())
    schema = find_schema(where)
    if schema is None:
        ex.warnings.append(
            f"no {SCHEMA_FILE} in {where} or a folder above it, so no $schema line was written; for editor "
            f"completion run `hermes-fleet schema > {SCHEMA_FILE}` at the repository root and export again"
        )
    if args.split:
        written = write_split(ex, Path(args.split), schema)
        print(f"wrote {len(written)} file(s) under {args.split}", file=sys.stderr)
    elif to_file:
        target = Path(to_file)
        fsio.make_dirs(target.parent)
        fsio.write_no_follow(target.parent, target.name, render_single(ex, schema_line(schema, target.parent)).encode("utf-8"))
        _copy_avatars(ex, target.parent)
        print(f"wrote {target}", file=sys.stderr)
    else:
        if ex.avatars:
            ex.warnings.append("image avatars need files: use -o FILE or --split DIR to export them")
            for bot in ex.bots:
                if bot.get("avatar", {}).get("kind") == "image":
                    bot.pop("avatar")
        sys.stdout.write(render_single(ex, schema_line(schema, Path.cwd())))
    print(f"hermes-fleet export: fleet {fleet!r}" + ("" if args.fleet else " (default; --fleet names it)"), file=sys.stderr)
    for warning in ex.warnings:
        print(f"hermes-fleet export: warning: {warning}", file=sys.stderr)
    if ex.variables:
        print(
            f"hermes-fleet export: set these {len(ex.variables)} variable(s) before apply (the manifests read "
            "them with from_env; their live values stay in the home):",
            file=sys.stderr,
        )
        for variable, source in sorted(ex.variables.items()):
            print(f"  {variable}  ({source})", file=sys.stderr)
    return ExitCode.OK
