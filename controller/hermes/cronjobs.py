"""Rules hermes-agent 0.19.0 applies to a cron job's own fields (pure facts; docs/hermes/cron.md).

- The Desktop's Bot Mode texts: the v2 delegation marker, and the pre-v2 sentence that makes the
  Desktop auto-pause a tagged job (docs/hermes/bot-mode.md#routines).
- The credential guard: `tools/cronjob_tools.py:_validate_cron_base_url`, re-run by
  `cron/scheduler.py:_guard_job_credential_exfil` before every run (docs/hermes/cron.md#credential-guard).
- `context_from` takes job ids only (12 lower-case hex digits; `cron/scheduler.py`, the context
  injection in the prompt builder), so the Desktop's `self` is written as the job's own id.
"""

from __future__ import annotations

import re

DELEGATION_MARKER = "[bot-mode:routine:v2] "
LEGACY_SENTENCE = 'You are running the scheduled routine "'
SELF = "self"  # Desktop's continuity: the job's own previous output
CUSTOM_PROVIDER = "custom"
_JOB_ID = re.compile(r"^[0-9a-f]+$")


def delegation_opening(instruction: str) -> str:
    """The Bot Mode opening an instruction starts with ('' when none): such a text is the Desktop's own."""
    text = instruction.strip()
    for opening in (LEGACY_SENTENCE, DELEGATION_MARKER):
        if text.startswith(opening):
            return opening.strip()
    return ""


def base_url_refusal(provider: str | None, base_url: str | None) -> str:
    """Why Hermes' cron credential guard blocks this pair at every run ('' when it lets it through).

    Hermes lets a `base_url` through with `provider: custom` (any case), with a named custom
    provider whose configured host matches, or with a registry provider whose own endpoint host
    matches. hermes-fleet accepts only the first: the others send the provider's stored key to an
    endpoint that cannot be checked here, and a matching host changes nothing.
    """
    url = (base_url or "").strip().rstrip("/")
    if not url:
        return ""
    name = (provider or "").strip()
    if not name:
        return "base_url override requires an explicit provider (Hermes' cron credential guard)"
    if name.lower() == CUSTOM_PROVIDER:
        return ""
    return (
        f"base_url {url!r} is not allowed for provider {name!r}: a named provider's stored credential may only "
        "be sent to its own endpoint (Hermes' cron credential guard)"
    )


def is_job_id(value: str) -> bool:
    """What 0.19.0 reads as a `context_from` entry; anything else is skipped with a log line."""
    return bool(_JOB_ID.match(value))
