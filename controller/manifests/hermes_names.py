"""Names checked against Hermes' own vocabulary: toolsets, providers, enum values and config keys.

A toolset or provider Hermes does not know, or an enum-valued config key with a value its reader
does not take, is refused: Hermes would drop the toolset, stop at "Unknown provider", or quietly
read another value (docs/manifest.md#hermes-vocabulary). A config key Hermes does not know is a
warning: Hermes keeps unknown keys, and a newer Hermes or a plugin may read one. The tables are
controller/hermes/vocabulary.py and config_keys.py (Hermes 0.19.0). Called by validation's
semantic pass for bots, `defaults`, routines and install-wide config.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator
from typing import Any, Protocol

from controller.diagnostics import DiagnosticCode
from controller.hermes import config_keys, vocabulary
from controller.manifests.models import Bot, BotDefaults, Routine

HERMES = "Hermes 0.19.0"
MAX_FUZZY = 1000  # did-you-mean look-ups per run, as validation's MAX_SUGGESTIONS
TOOLSET_LISTS = ("agent.disabled_toolsets",)  # config keys holding toolset names, beside platform_toolsets.<p>

Where = tuple[Any, tuple[object, ...]]


class Report(Protocol):
    items: list[Any]

    def error(self, where: Where, message: str, hint: str = "", code: DiagnosticCode = "invalid") -> None: ...
    def warning(self, where: Where, message: str, hint: str = "", code: DiagnosticCode = "warning") -> None: ...


class Item(Protocol):
    def at(self, *more: object) -> Where: ...


def check_settings(
    report: Report,
    item: Item,
    *,
    settings: Bot | BotDefaults,
    prefix: tuple[object, ...],
    defaults: BotDefaults | None,
    covered: tuple[str, ...],
) -> None:
    """A bot's (or `defaults`') toolsets, model provider and config (less the keys typed fields cover)."""
    servers = mcp_names(settings, defaults)
    for i, name in enumerate(settings.toolsets or []):
        check_toolset(report, item.at(*prefix, "toolsets", i), name, servers)
    if settings.model is not None and settings.model.provider is not None:
        configs = (settings.config, defaults.config if defaults else None)
        check_provider(report, item.at(*prefix, "model", "provider"), settings.model.provider, configs)
    check_config(report, item, config=settings.config, prefix=prefix, servers=servers, covered=covered)


def check_routine(report: Report, item: Item, routine: Routine, bot: Bot | None, defaults: BotDefaults | None) -> None:
    """A routine's toolsets (its job's enabled_toolsets) and provider override."""
    servers = mcp_names(bot, defaults) if bot is not None else frozenset()
    for i, name in enumerate(routine.toolsets or []):
        check_toolset(report, item.at("toolsets", i), name, servers)
    if routine.provider is not None:
        configs = (bot.config if bot else None, defaults.config if defaults else None)
        check_provider(report, item.at("provider"), routine.provider, configs)


def check_install_config(report: Report, item: Item, config: dict[str, Any] | None, covered: tuple[str, ...]) -> None:
    check_config(report, item, config=config, prefix=(), servers=frozenset(), covered=covered)


def mcp_names(settings: Bot | BotDefaults | None, defaults: BotDefaults | None) -> frozenset[str]:
    """The MCP servers a bot ends up with (its own, else the defaults'): valid toolset names too."""
    own = settings.mcp_servers if settings is not None else None
    servers = own if own is not None else (defaults.mcp_servers if defaults is not None else None)
    return frozenset(servers or ())


def custom_providers(*configs: dict[str, Any] | None) -> frozenset[str]:
    """Provider names a config declares itself: `providers.<name>` and `custom_providers[].name`
    (hermes_cli/runtime_provider.py:_get_named_custom_provider matches them, lower-cased)."""
    names: set[str] = set()
    for config in configs:
        for dotted, value in _leaves(config or {}, ()):
            parts = dotted.split(".")
            if parts[0] == "providers" and len(parts) > 1:
                names.add(parts[1].strip().lower())
                if parts[2:] == ["name"] and isinstance(value, str):
                    names.add(value.strip().lower().replace(" ", "-"))
            elif dotted == "custom_providers" and isinstance(value, list):
                names.update(
                    e["name"].strip().lower().replace(" ", "-")
                    for e in value
                    if isinstance(e, dict) and isinstance(e.get("name"), str)
                )
    return frozenset(names)


def check_toolset(report: Report, where: Where, name: Any, servers: frozenset[str]) -> None:
    if not isinstance(name, str) or vocabulary.toolset_known(name, servers):
        return
    report.error(
        where,
        f"{HERMES} has no toolset {name!r} (toolsets.py:validate_toolset; the name would give the bot no tools)",
        _did_you_mean(report, name, vocabulary.toolset_choices(servers), "see docs/manifest.md#hermes-vocabulary for the names"),
        "unknown_toolset",
    )


def check_provider(report: Report, where: Where, name: str, configs: tuple[dict[str, Any] | None, ...]) -> None:
    """`name` against Hermes' providers, and the ones the bot's own config declares."""
    if vocabulary.provider_known(name):
        return
    custom = custom_providers(*configs)
    if vocabulary.provider_known(name, custom):
        return
    report.error(
        where,
        f"{HERMES} has no provider {name!r}: hermes_cli/auth.py:resolve_provider stops every run with 'Unknown provider'",
        _did_you_mean(
            report,
            name.strip().lower(),
            vocabulary.provider_choices() | custom,
            "name a built-in provider, or declare yours under config: {providers: {<name>: {base_url: ...}}}",
        ),
        "unknown_provider",
    )


def check_config(
    report: Report,
    item: Item,
    *,
    config: dict[str, Any] | None,
    prefix: tuple[object, ...],
    servers: frozenset[str],
    covered: tuple[str, ...],
) -> None:
    for dotted, value, loc in _located_leaves(config or {}, (*prefix, "config")):
        where = item.at(*loc)
        parts = dotted.split(".")
        if "" in parts or _covered(dotted, covered):
            continue  # refused by validation (config_key, config_covered)
        spec = vocabulary.enum_problem(dotted, value)
        if spec is not None:
            _enum_error(report, where, dotted, value, spec)
        if (parts[0] == "platform_toolsets" and len(parts) == 2) or dotted in TOOLSET_LISTS:
            for i, name in enumerate(value if isinstance(value, list) else []):
                check_toolset(report, item.at(*loc, i), name, servers)
        gap = config_keys.unknown(dotted)
        if gap is not None:
            path, guess = gap
            hint = f"did you mean {guess!r}?" if guess and len(report.items) < MAX_FUZZY else "check the key's spelling"
            report.warning(
                where,
                f"{HERMES} does not know the config key {path!r} (not in hermes_cli/config.py DEFAULT_CONFIG); "
                "it is written, but no 0.19.0 reader may see it",
                hint,
                "unknown_config_key",
            )


def _enum_error(report: Report, where: Where, dotted: str, value: Any, spec: vocabulary.Enum) -> None:
    allowed = ", ".join(spec.values)
    if isinstance(value, bool):
        shown = f"{str(value).lower()} (an unquoted yes/no/on/off is a boolean, as in Hermes' config.yaml)"
        hint = f"write one of {allowed}; quote a YAML 1.1 word ('off', 'yes') to keep it a string"
    else:
        shown = repr(value)
        hint = _did_you_mean(report, str(value).strip().lower(), frozenset(spec.values), f"write one of {allowed}")
    report.error(
        where,
        f"config key {dotted!r} is {shown}; {HERMES} takes {allowed} ({spec.reader} {spec.otherwise})",
        hint,
        "invalid_value",
    )


@functools.lru_cache(maxsize=4096)
def _covered(dotted: str, covered: tuple[str, ...]) -> bool:
    return any(dotted == c or dotted.startswith(c + ".") for c in covered)


def _did_you_mean(report: Report, value: str, options: frozenset[str], fallback: str) -> str:
    if len(report.items) >= MAX_FUZZY:
        return fallback
    guess = difflib.get_close_matches(value, sorted(options), n=1)
    return f"did you mean {guess[0]!r}?" if guess else fallback


def _leaves(config: dict[str, Any], loc: tuple[object, ...]) -> Iterator[tuple[str, Any]]:
    for dotted, value, _ in _located_leaves(config, loc):
        yield dotted, value


def _located_leaves(
    node: dict[str, Any], loc: tuple[object, ...], dotted: str = ""
) -> Iterator[tuple[str, Any, tuple[object, ...]]]:
    """(dotted key, value, field path) of each leaf, keys dotted or nested as written."""
    for key, value in node.items():
        path = f"{dotted}.{key}" if dotted else str(key)
        if isinstance(value, dict) and value and not _is_server(path):
            yield from _located_leaves(value, (*loc, key), path)
        else:
            yield path, value, (*loc, key)


def _is_server(path: str) -> bool:
    """`mcp_servers.<name>` is one value (refused in config anyway as covered)."""
    return path.startswith("mcp_servers.") and path.count(".") == 1
