"""Runtime health: is a configured fleet actually running? (pure)

`evaluate(bots, now)` turns what was read from Hermes' own state (engine.health reads it) into
findings, each with a stable `code`:

| code | severity | when |
|---|---|---|
| `routine-failed` | error | a routine's last run ended `last_status: error` in its cron store |
| `routine-delivery-failed` | warning | its last result could not be delivered (`last_delivery_error`) |
| `gateway-down` | error | a bot has enabled routines and nothing ticks its cron store (no gateway of its own; a 0.19.0 |
|                |       | multiplexing root gateway ticks the root's store alone): its routines never fire |
| `ticker-stalled` | error | its gateway runs but the cron ticker's heartbeat is older than Hermes' own limit |
| `ticker-failing` | warning | the heartbeat is fresh but no tick has succeeded within that limit |
| `credentials-missing` | error | the bot's model provider needs a credential found neither in its `.env` nor in `auth.json` |
| `mcp-unavailable` | warning | bots have MCP servers and Hermes' Python has no `mcp` library (one per fleet) |

`transitions(before, after)` tells `watch` which findings appeared and which cleared, so it
alerts on changes, not on every run. Facts: docs/hermes/runtime.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.codes import FindingSeverity, HealthCode
from controller.hermes import providers

# Hermes' `hermes cron status`: three missed 60 s ticks plus slack (docs/hermes/runtime.md#ticker-heartbeat).
TICKER_INTERVAL = 60
STALE_AFTER = TICKER_INTERVAL * 3 + 20
ERROR_TEXT_MAX = 300


@dataclass(frozen=True)
class RoutineRuntime:
    routine: str  # <bot>/<title>
    job_id: str
    found: bool
    enabled: bool = True
    state: str | None = None
    last_status: str | None = None
    last_error: str | None = None
    last_delivery_error: str | None = None
    last_run_at: str | None = None
    next_run_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "routine": self.routine,
            "job_id": self.job_id,
            "found": self.found,
            "enabled": self.enabled,
            "state": self.state,
            "last_status": self.last_status,
            "last_error": self.last_error,
            "last_delivery_error": self.last_delivery_error,
            "last_run_at": self.last_run_at,
            "next_run_at": self.next_run_at,
        }


@dataclass(frozen=True)
class GatewayRuntime:
    running: bool
    pid: int | None = None
    state: str | None = None
    source: str = ""  # gateway.pid | gateway_state.json | root (a multiplexing root gateway serves the bot)
    ticks_store: bool = True  # this gateway's cron ticker runs the bot's own store


@dataclass(frozen=True)
class BotRuntime:
    bot: str
    provider: str | None  # model.provider as the bot's config.yaml says (None: unset)
    env_keys: frozenset[str]  # keys with a non-empty value in the bot's .env
    stored: frozenset[str]  # providers with a credential in the bot's or the root's auth.json
    heartbeat: float | None  # epoch of the ticker's last loop, None: never recorded
    last_success: float | None
    gateway: GatewayRuntime
    routines: tuple[RoutineRuntime, ...] = ()
    errors: tuple[str, ...] = ()  # what could not be read
    mcp_servers: tuple[str, ...] = ()  # the enabled MCP servers in its config.yaml


@dataclass(frozen=True)
class Finding:
    code: HealthCode
    severity: FindingSeverity
    subject: str  # an object key: bot/<name> or routine/<bot>/<title>
    message: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.code, self.subject)

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "object": self.subject, "message": self.message}


@dataclass(frozen=True)
class Health:
    bots: tuple[BotRuntime, ...] = ()
    findings: tuple[Finding, ...] = ()
    now: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def age(self, epoch: float | None) -> float | None:
        return None if epoch is None else round(max(0.0, self.now - epoch), 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "findings": [f.to_json() for f in self.findings],
            "bots": [
                {
                    "bot": b.bot,
                    "provider": b.provider,
                    "credentials": credential_source(b),
                    "gateway": {
                        "running": b.gateway.running,
                        "ticks_store": b.gateway.ticks_store,
                        "pid": b.gateway.pid,
                        "state": b.gateway.state,
                        "source": b.gateway.source,
                    },
                    "ticker": {"heartbeat_age_seconds": self.age(b.heartbeat), "success_age_seconds": self.age(b.last_success)},
                    "routines": [r.to_json() for r in b.routines],
                    "errors": list(b.errors),
                }
                for b in self.bots
            ],
        }


def first_line(text: str | None) -> str:
    line = next((ln.strip() for ln in str(text or "").splitlines() if ln.strip()), "")
    return line if len(line) <= ERROR_TEXT_MAX else line[: ERROR_TEXT_MAX - 1] + "…"


def credential_source(bot: BotRuntime) -> str | None:
    """Where the bot's provider finds its credential: `env:KEY`, `auth.json`, `unchecked`, or None (missing)."""
    name = providers.canonical(bot.provider)
    if name in providers.UNCHECKED_PROVIDERS:
        return "unchecked"
    keys = providers.credential_keys(bot.provider)
    found = next((k for k in keys or () if k in bot.env_keys), None)
    if found:
        return f"env:{found}"
    if (name in bot.stored) if name is not None else bool(bot.stored):
        return "auth.json"
    if keys is None and name not in providers.OAUTH_PROVIDERS:
        return "unchecked"  # a provider this table does not know: nothing to check
    return None


def _no_ticker(bot: BotRuntime, active: int) -> str:
    start = f"start `hermes -p {bot.bot} gateway run` (the hermes-gateway@{bot.bot} service; docs/routines.md)"
    if bot.gateway.running:
        return (
            f"the root gateway (pid {bot.gateway.pid}) serves this bot's chats, but its cron ticker runs only the root's "
            f"own store (Hermes 0.19.0), so this bot's {active} routine(s) never fire, and a profile gateway refuses to "
            f"start beside the multiplexer: turn gateway.multiplex_profiles off, then {start}"
        )
    return f"no gateway runs for this bot, so its {active} routine(s) never fire; {start}"


def evaluate(bots: Iterable[BotRuntime], now: float, *, mcp_library: bool | None = None, mcp_where: str = "") -> Health:
    """`mcp_library`: whether the Python that runs Hermes has the `mcp` library (None: not known)."""
    bots = tuple(bots)
    findings: list[Finding] = []
    if mcp_library is False and (serving := [b for b in bots if b.mcp_servers]):
        findings.append(mcp_unavailable(serving, mcp_where))
    for bot in bots:
        subject = f"bot/{bot.bot}"
        active = [r for r in bot.routines if r.found and r.enabled and r.state not in ("paused", "completed")]
        for r in bot.routines:
            if not r.found:
                continue
            if r.enabled and r.last_status == "error":
                when = f" at {r.last_run_at}" if r.last_run_at else ""
                findings.append(
                    Finding(
                        HealthCode.ROUTINE_FAILED,
                        "error",
                        f"routine/{r.routine}",
                        f"last run failed{when}: {first_line(r.last_error) or 'no error text'}",
                    )
                )
            if r.enabled and r.last_delivery_error:
                findings.append(
                    Finding(
                        HealthCode.ROUTINE_DELIVERY_FAILED,
                        "warning",
                        f"routine/{r.routine}",
                        f"its last result was not delivered: {first_line(r.last_delivery_error)}",
                    )
                )
        if active and not (bot.gateway.running and bot.gateway.ticks_store):
            findings.append(Finding(HealthCode.GATEWAY_DOWN, "error", subject, _no_ticker(bot, len(active))))
        elif bot.gateway.running and active:
            beat = None if bot.heartbeat is None else now - bot.heartbeat
            ok = None if bot.last_success is None else now - bot.last_success
            if beat is not None and beat > STALE_AFTER:
                findings.append(
                    Finding(
                        HealthCode.TICKER_STALLED,
                        "error",
                        subject,
                        f"the gateway (pid {bot.gateway.pid}) runs but its cron ticker last beat {int(beat)}s ago "
                        f"(expected every {TICKER_INTERVAL}s): routines may not fire; restart the gateway",
                    )
                )
            elif beat is not None and ok is not None and ok > STALE_AFTER:
                findings.append(
                    Finding(
                        HealthCode.TICKER_FAILING,
                        "warning",
                        subject,
                        f"the cron ticker runs but no tick has succeeded for {int(ok)}s; look for 'Cron tick error' in its log",
                    )
                )
        if credential_source(bot) is None:
            keys = providers.credential_keys(bot.provider)
            what = (
                f"provider {providers.canonical(bot.provider)}" if providers.canonical(bot.provider) else "no provider set (auto)"
            )
            wanted = ", ".join(keys[:4]) + (" or another provider's key" if bot.provider is None else "") if keys else "a login"
            findings.append(
                Finding(
                    HealthCode.CREDENTIALS_MISSING,
                    "error",
                    subject,
                    f"{what}: no credential found ({wanted} in its .env, or an entry in auth.json); a key set only in "
                    "the gateway's own environment is not visible here",
                )
            )
    return Health(bots=bots, findings=tuple(findings), now=now)


def mcp_unavailable(bots: list[BotRuntime], where: str) -> Finding:
    """One finding for the fleet: Hermes starts no MCP server without the library (docs/hermes/no-effect.md#mcp-library)."""
    names = ", ".join(f"{b.bot} ({', '.join(b.mcp_servers)})" for b in bots[:5]) + (
        f" and {len(bots) - 5} more" if len(bots) > 5 else ""
    )
    return Finding(
        HealthCode.MCP_UNAVAILABLE,
        "warning",
        "install/root",
        f"the Python that runs Hermes ({where}) has no mcp library, so no MCP server starts for {len(bots)} bot(s): "
        f"{names}; install hermes-agent[mcp] into it and restart the gateway",
    )


def transitions(before: Iterable[Finding], after: Iterable[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(findings that appeared, findings that cleared) between two health checks."""
    old = {f.key: f for f in before}
    new = {f.key: f for f in after}
    return [f for k, f in new.items() if k not in old], [f for k, f in old.items() if k not in new]
