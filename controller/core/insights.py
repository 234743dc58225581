"""Plan insights: the consequences of a plan a reviewer can act on (pure).

`insights(inputs, plan)` reads only the frozen Inputs and the Plan made from them:

- **capability changes** per bot: toolsets (`platform_toolsets.<platform>`), MCP servers and the
  approvals modes, each marked `widening` (the bot may do more, or ask less) or `narrowing`;
  a created bot widens by everything it is given;
- **scheduled LLM runs per day**, before and after the plan, from routine schedules (one-shots
  are counted apart; paused and `no_agent` routines make no model call);
- **loop risks**: rooms where every member answers while the bot loop guard is off, and
  routines whose prompts @-mention each other's bots in a cycle.

`plan --deny-widening` fails on any widening change (docs/cli.md, exit codes).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from controller.core import mcp
from controller.core.inventory import routine_parts
from controller.core.planning import renames
from controller.core.types import Action, FieldChange, Inputs, Kind, ObjectChange, Op, Plan
from controller.errors import ScheduleError
from controller.hermes import capabilities, naming, schedules
from controller.hermes.platforms import PLATFORMS_0_19, TOOLSETS_KEY

WIDENING = "widening"
NARROWING = "narrowing"
CHANGED = "changed"
LOOP_GUARD_KEY = "gateway.bot_loop_guard.enabled"
_MENTION = re.compile(r"@([a-z0-9][a-z0-9_-]*)", re.IGNORECASE)


@dataclass(frozen=True)
class CapabilityChange:
    bot: str
    what: str  # toolsets | mcp | approvals | cron-approvals
    direction: str  # widening | narrowing | changed
    gained: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    before: Any = None
    after: Any = None
    platforms: tuple[str, ...] = ()  # toolsets: where (empty: every platform)
    new_bot: bool = False
    note: str = ""  # what stands between the change and its effect (mcp: no mcp library)

    def describe(self) -> str:
        return f"bot/{self.bot} {self.kind()}"

    def kind(self) -> str:
        """The change without its bot: `toolsets: +terminal on every platform` (one kind for every bot it is on)."""
        parts = [f"+{x}" for x in self.gained] + [f"-{x}" for x in self.lost]
        body = " ".join(parts) if parts else f"{self.before} -> {self.after}"
        where = ""
        if self.what == "toolsets":
            where = " on every platform" if not self.platforms else f" on {', '.join(self.platforms)}"
        new = " (new bot)" if self.new_bot else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.what}{new}: {body}{where}{note}"


@dataclass(frozen=True)
class RunRate:
    routine: str  # <bot>/<title>
    before: float  # model runs per day
    after: float


@dataclass(frozen=True)
class LoopRisk:
    kind: str  # room | routines
    subject: str
    severity: str  # high (nothing stops it) | bounded (limited by the loop guard or a turn limit)
    detail: str


@dataclass(frozen=True)
class Insights:
    capabilities: tuple[CapabilityChange, ...] = ()
    runs_before: float = 0.0
    runs_after: float = 0.0
    one_shots_before: int = 0
    one_shots_after: int = 0
    rates: tuple[RunRate, ...] = ()  # routines whose rate changes
    loops: tuple[LoopRisk, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def widening(self) -> list[CapabilityChange]:
        return [c for c in self.capabilities if c.direction == WIDENING]

    def to_json(self) -> dict[str, Any]:
        return {
            "widening": len(self.widening),
            "capabilities": [
                {
                    "bot": c.bot,
                    "what": c.what,
                    "direction": c.direction,
                    "gained": list(c.gained),
                    "lost": list(c.lost),
                    "before": c.before,
                    "after": c.after,
                    "platforms": list(c.platforms),
                    "new_bot": c.new_bot,
                    "note": c.note,
                }
                for c in self.capabilities
            ],
            "llm_runs_per_day": {
                "before": round(self.runs_before, 2),
                "after": round(self.runs_after, 2),
                "one_shots_before": self.one_shots_before,
                "one_shots_after": self.one_shots_after,
                "routines": [
                    {"routine": r.routine, "before": round(r.before, 2), "after": round(r.after, 2)} for r in self.rates
                ],
            },
            "loop_risks": [
                {"kind": x.kind, "subject": x.subject, "severity": x.severity, "detail": x.detail} for x in self.loops
            ],
        }


def by_kind(changes: Iterable[CapabilityChange]) -> list[tuple[str, list[str]]]:
    """(kind, its bots) for each kind of change, the most bots first (then by kind)."""
    groups: dict[str, list[str]] = {}
    for change in changes:
        groups.setdefault(change.kind(), []).append(change.bot)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def insights(inputs: Inputs, plan: Plan) -> Insights:
    inputs = renames.view(inputs)  # a renamed bot's "before" is its old profile
    caps: list[CapabilityChange] = []
    for change in plan.changes:
        if change.kind is Kind.BOT and change.action in (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.RENAME):
            caps += bot_capabilities(inputs, change)
    rates, before, after, once_before, once_after = run_rates(inputs, plan)
    return Insights(
        capabilities=tuple(caps),
        runs_before=before,
        runs_after=after,
        one_shots_before=once_before,
        one_shots_after=once_after,
        rates=tuple(rates),
        loops=tuple(room_risks(inputs) + routine_cycles(inputs)),
    )


# --- capabilities ---------------------------------------------------------------------------------


def bot_capabilities(inputs: Inputs, change: ObjectChange) -> list[CapabilityChange]:
    created = change.action is Action.CREATE
    live = inputs.observed.live.get(change.name)
    fields = {f.key: f for f in change.fields if f.space == "config"}

    def before(key: str) -> Any:
        if created or live is None:
            return None
        present, value = live.config_value(key)
        return value if present else None

    def after(key: str) -> Any:
        f = fields.get(key)
        if f is None:
            return before(key)
        return None if f.op is Op.REMOVE else f.new

    out: list[CapabilityChange] = []
    out += _toolsets(change.name, fields, before, after, created)
    out += _mcp(change.name, fields, before, created, mcp.NOT_STARTED if inputs.observed.mcp_library is False else "")
    for key, what, reader in (
        ("approvals.mode", "approvals", capabilities.approvals_mode),
        ("approvals.cron_mode", "cron-approvals", capabilities.cron_approvals),
    ):
        if key not in fields and not created:
            continue
        old, new = reader(before(key)), reader(after(key))
        if created:
            old = reader(None)  # a new bot is compared with Hermes' default
        if old == new:
            continue
        rank = capabilities.approvals_rank if what == "approvals" else (lambda v: 0 if v == "deny" else 1)
        direction = WIDENING if rank(new) > rank(old) else NARROWING
        out.append(CapabilityChange(change.name, what, direction, before=old, after=new, new_bot=created))
    return out


def _toolset_set(value: Any) -> frozenset[str] | None:
    if isinstance(value, list | tuple):
        return frozenset(str(v) for v in value)
    return None


def _toolsets(
    bot: str,
    fields: Mapping[str, FieldChange],
    before: Any,
    after: Any,
    created: bool,
) -> list[CapabilityChange]:
    keys = [k for k in fields if k.startswith(f"{TOOLSETS_KEY}.")]
    if created and not keys:
        # No pin: the new bot gets Hermes' default set everywhere (docs/hermes/effect-research.md#toolsets).
        gained = tuple(sorted(capabilities.DEFAULT_TOOLSETS_0_19))
        return [CapabilityChange(bot, "toolsets", WIDENING, gained=gained, new_bot=True)]
    by_delta: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for key in sorted(keys):
        platform = key.split(".", 1)[1]
        default = capabilities.default_toolsets(platform)
        old = frozenset() if created else (_toolset_set(before(key)) or default)
        new = _toolset_set(after(key))
        if new is None:
            new = default
        if old == new:
            continue
        delta = (tuple(sorted(new - old)), tuple(sorted(old - new)))
        by_delta.setdefault(delta, []).append(platform)
    out = []
    for (gained, lost), platforms in by_delta.items():
        # Gaining `no_mcp` removes every MCP server: the one item whose gain narrows.
        widens = any(g != capabilities.NO_MCP for g in gained) or capabilities.NO_MCP in lost
        where = () if set(platforms) >= set(PLATFORMS_0_19) else tuple(platforms)
        out.append(
            CapabilityChange(bot, "toolsets", WIDENING if widens else NARROWING, gained, lost, platforms=where, new_bot=created)
        )
    return out


def _mcp(bot: str, fields: Mapping[str, FieldChange], before: Any, created: bool, note: str) -> list[CapabilityChange]:
    out = []
    for key in sorted(k for k in fields if k.startswith("mcp_servers.")):
        name = key.split(".", 1)[1]
        f = fields[key]
        was = False if created else mcp.enabled(before(key))
        now = f.op is not Op.REMOVE and mcp.enabled(f.new)
        if now and not was:
            out.append(CapabilityChange(bot, "mcp", WIDENING, gained=(name,), new_bot=created, note=note))
        elif was and not now:
            out.append(CapabilityChange(bot, "mcp", NARROWING, lost=(name,)))
        elif was and now:
            out.append(CapabilityChange(bot, "mcp", CHANGED, before=name, after="settings changed"))
    return out


# --- scheduled model runs -------------------------------------------------------------------------


def run_rates(inputs: Inputs, plan: Plan) -> tuple[list[RunRate], float, float, int, int]:
    rates: list[RunRate] = []
    total_before = total_after = 0.0
    once_before = once_after = 0
    for change in plan.changes:
        if change.kind is not Kind.ROUTINE:
            continue
        bot, title = routine_parts(change.name)
        ref = change.ref or str(inputs.inventory.objects.get(change.key, {}).get("job_id") or "")
        live = _live_job(inputs, bot, ref)
        before, b_once = _job_rate(live) if live is not None else (0.0, 0)
        if change.action is Action.DELETE:
            after, a_once = 0.0, 0
        elif change.action in (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.NOOP):
            routine = (
                next((r for r in inputs.state.bots[bot].routines if r.name == title), None) if bot in inputs.state.bots else None
            )
            after, a_once = _routine_rate(routine) if routine is not None else (before, b_once)
            if change.action is Action.NOOP and live is None:
                after, a_once = before, b_once  # a one-shot that already ran
        else:  # orphan, release, conflict, error: the live job keeps running as it is
            after, a_once = before, b_once
        total_before += before
        total_after += after
        once_before += b_once
        once_after += a_once
        if abs(after - before) > 1e-9:
            rates.append(RunRate(change.name, before, after))
    rates.sort(key=lambda r: -abs(r.after - r.before))
    return rates, total_before, total_after, once_before, once_after


def _live_job(inputs: Inputs, bot: str, job_id: str) -> Mapping[str, Any] | None:
    if not job_id:
        return None
    return next((j for j in inputs.observed.jobs.get(bot, ()) if str(j.get("id")) == job_id), None)


def _job_rate(job: Mapping[str, Any]) -> tuple[float, int]:
    """(model runs per day, one-shot runs) of a live Hermes job (docs/hermes/cron.md#job-record)."""
    if job.get("enabled") is False or job.get("state") in ("paused", "completed") or job.get("no_agent") is True:
        return 0.0, 0
    schedule = job.get("schedule")
    if not isinstance(schedule, Mapping):
        return 0.0, 0
    kind = schedule.get("kind")
    if kind == "interval" and isinstance(schedule.get("minutes"), int) and schedule["minutes"] > 0:
        return 1440 / schedule["minutes"], 0
    if kind == "cron" and isinstance(schedule.get("expr"), str):
        return cron_runs_per_day(schedule["expr"]), 0
    if kind == "once":
        return 0.0, 1
    return 0.0, 0


def _routine_rate(routine: Any) -> tuple[float, int]:
    if routine.paused or routine.no_agent:
        return 0.0, 0
    try:
        parsed = schedules.parse(routine.schedule)
    except ScheduleError:
        return 0.0, 0
    if parsed.kind == "interval":
        return 1440 / (parsed.minutes or 1), 0
    if parsed.kind == "cron":
        return cron_runs_per_day(parsed.expr or ""), 0
    return 0.0, 1


@functools.lru_cache(maxsize=1024)
def cron_runs_per_day(expr: str) -> float:
    """Average runs per day of a 5-field numeric cron expression over a (non-leap) year.

    Day of month and day of week combine as cron does: when both are restricted, a day matches
    either one; when one is `*`, only the other counts.
    """
    try:
        minutes, hours, doms, months, dows = schedules.croniter_class()(expr).expanded[:5]
    except Exception:
        return 0.0
    per_day = (60 if minutes == ["*"] else len(minutes)) * (24 if hours == ["*"] else len(hours))
    dom_any, dow_any = doms == ["*"], dows == ["*"]
    dow_set = {int(d) % 7 for d in dows} if not dow_any else set()
    matching = 0
    day = date(2025, 1, 1)
    for _ in range(365):
        month_ok = months == ["*"] or day.month in months
        dom_ok = dom_any or day.day in doms
        dow_ok = dow_any or (day.weekday() + 1) % 7 in dow_set
        day_ok = (dom_ok and dow_ok) if (dom_any or dow_any) else (dom_ok or dow_ok)
        matching += month_ok and day_ok
        day += timedelta(days=1)
    return per_day * matching / 365


# --- loop risks -----------------------------------------------------------------------------------


def room_risks(inputs: Inputs) -> list[LoopRisk]:
    guard = inputs.state.install_config.get(LOOP_GUARD_KEY)
    out = []
    for room in inputs.state.rooms.values():
        if room.who_answers != "everyone":
            continue
        members = ", ".join(room.members)
        if guard is False:
            out.append(
                LoopRisk(
                    "room",
                    room.name,
                    "high",
                    f"every member ({members}) answers every message and the bot loop guard is off "
                    f"({LOOP_GUARD_KEY}: false): members can keep answering each other; set who_answers: lead:<bot>, "
                    "or turn the guard on",
                )
            )
    return out


def _handles(inputs: Inputs) -> dict[str, str]:
    """@-tag -> bot: the profile name, and the forms of its title (docs/hermes/bot-mode.md#mentions)."""
    tags: dict[str, str] = {}
    for name, bot in inputs.state.bots.items():
        tags.setdefault(name, name)
        for form in naming.mention_forms(bot.title or ""):
            tags.setdefault(form, name)
    return tags


def routine_cycles(inputs: Inputs) -> list[LoopRisk]:
    """Routines whose prompts @-mention another bot, forming a cycle of bots messaging each other."""
    tags = _handles(inputs)
    edges: dict[str, dict[str, list[str]]] = {}
    for name, bot in inputs.state.bots.items():
        for routine in bot.routines:
            if routine.paused or routine.no_agent or not routine.prompt:
                continue
            for match in _MENTION.finditer(routine.prompt):
                target = tags.get(match.group(1).lower())
                if target and target != name:
                    edges.setdefault(name, {}).setdefault(target, []).append(routine.name)
    guard = inputs.state.install_config.get(LOOP_GUARD_KEY)
    out = []
    for component in _cycles(edges):
        links = [
            f"{a} ({', '.join(repr(t) for t in edges[a][b])}) -> @{b}"
            for a in component
            for b in sorted(edges.get(a, {}))
            if b in component
        ]
        severity = "high" if guard is False else "bounded"
        tail = "and the bot loop guard is off" if guard is False else "(the bot loop guard limits each exchange)"
        out.append(
            LoopRisk(
                "routines", ", ".join(component), severity, f"scheduled routines message each other {tail}: " + "; ".join(links)
            )
        )
    return out


def _cycles(edges: Mapping[str, Mapping[str, Iterable[str]]]) -> list[list[str]]:
    """Strongly connected groups of two or more bots (Tarjan), each sorted; in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)
