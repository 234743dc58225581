"""Declared values the target Hermes would not act on: refused, or warned about, at validate time.

A field is done when a running Hermes does it (PRODUCT.md). What validation alone can tell:

- `model.base_url` with a provider that sends elsewhere: refused (`base_url_ignored`), with the
  reason Hermes 0.19.0 drops it (docs/hermes/no-effect.md#model-base-url);
- `gateway.bot_loop_guard.max_hops` and `bot_replies_expect_reply`: read by no Hermes, so they are
  not fields; naming one is refused (`no_reader`) with what to write instead
  (docs/hermes/no-effect.md#loop-guard-keys);
- `skills.platform_disabled.cron`: no effect in a cron run on 0.19.0; one warning per fleet
  (`no_effect`), on the first declaration, counting the others (docs/hermes/no-effect.md#cron-platform-skills).

What depends on the Hermes a home runs (Bot Mode records on 0.19.0, the `mcp` library) is said by
`plan` (core/planning/notes.py), which knows that version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.diagnostics import DiagnosticCode, Severity
from controller.hermes import endpoints

Where = Any  # validating's (Document, field path)
CRON = "cron"
# Fields no Hermes reads (main@0a97eee gateway/bot_loop_guard.py:settings_from_config reads enabled,
# max_events, window_seconds, cooldown_seconds; 0.19.0 has no loop guard): (message, hint).
RETIRED = {
    ("bot_loop_guard", "max_hops"): (
        "max_hops is read by no Hermes: Hermes main's loop guard counts bot messages per conversation in a "
        "time window (max_events within window_seconds, then a cooldown), and 0.19.0 has no loop guard",
        "write max_events (bot messages per window, Hermes' default 20) with window_seconds (default 300)",
    ),
    ("bot_loop_guard", "bot_replies_expect_reply"): (
        "bot_replies_expect_reply is read by no Hermes (main's loop guard reads enabled, max_events, "
        "window_seconds and cooldown_seconds; 0.19.0 has no loop guard)",
        "remove it; bounded bot-to-bot replies are what the loop guard's max_events gives",
    ),
}


class Reporter(Protocol):
    def add(self, severity: Severity, where: Where, message: str, hint: str = "", code: DiagnosticCode = "invalid") -> None: ...


@dataclass
class Effects:
    """Collects what one fleet declares without effect; `finish` reports the once-per-fleet warnings."""

    cron_skills: list[Where] = field(default_factory=list)

    def check_settings(self, at: Callable[..., Where], prefix: tuple[object, ...], settings: Any, report: Reporter) -> None:
        """A bot's (or `defaults`') model and skills; `at(*path)` locates a field of it."""
        model = settings.model
        if model is not None and model.base_url is not None:
            reason = endpoints.ignored_reason(model.provider, model.base_url)
            if reason is not None:
                report.add(
                    "error",
                    at(*prefix, "model", "base_url"),
                    f"model.base_url is not used with provider {model.provider!r}: {reason}",
                    "for your own endpoint write 'provider: custom' (Hermes then sends every request to base_url), "
                    "or drop base_url",
                    "base_url_ignored",
                )
        platforms = settings.skills.platform_disabled if settings.skills is not None else None
        if platforms and CRON in platforms:
            self.cron_skills.append(at(*prefix, "skills", "platform_disabled", CRON))

    def finish(self, report: Reporter) -> None:
        if self.cron_skills:
            others = len(self.cron_skills) - 1
            also = f" (also declared {others} more time(s) in this fleet)" if others else ""
            report.add(
                "warning",
                self.cron_skills[0],
                "skills.platform_disabled.cron changes nothing on Hermes 0.19.0: a routine's run clears the session "
                "platform, and the skill index reads the per-platform list from it, so only skills.disabled applies "
                f"to routines{also}",
                "to keep a skill out of routines, list it in skills.disabled (every platform)",
                "no_effect",
            )


def retired_field(loc: tuple[object, ...]) -> tuple[str, str] | None:
    """(message, hint) for an unknown field that is a key no Hermes reads; None for any other."""
    return RETIRED.get((str(loc[-2]), str(loc[-1]))) if len(loc) >= 2 else None
