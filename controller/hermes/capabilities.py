"""What a bot may do, as Hermes 0.19.0 decides it: default toolsets and the strictness of approvals (pure).

Facts: docs/hermes/effect-research.md#toolsets (a platform without `platform_toolsets.<p>` gets
Hermes' default set; `no_mcp` in a list drops every MCP server) and docs/hermes/effect-research.md#approvals
(`approvals.mode` manual | smart | off, unknown strings read as manual, a YAML `off` (False) as off;
`approvals.cron_mode` deny unless the string approve/off/allow/yes; a boolean is deny). Used by the plan insights to tell a
widening change from a narrowing one.
"""

from __future__ import annotations

from typing import Any

# `_get_platform_tools({}, "cli")` in 0.19.0, less `kanban` (always added, hidden outside kanban
# workers): the tools a bot has on most platforms when no toolsets are pinned.
DEFAULT_TOOLSETS_0_19 = frozenset(
    {
        "browser", "clarify", "code_execution", "computer_use", "cronjob", "delegation", "file", "image_gen",
        "memory", "session_search", "skills", "terminal", "todo", "tts", "vision", "web",
    }
)  # fmt: skip
# Platforms whose default set differs from that one (the same resolver, run per platform).
_PLATFORM_DEFAULTS = {
    "homeassistant": DEFAULT_TOOLSETS_0_19 | {"homeassistant"},
    "feishu": DEFAULT_TOOLSETS_0_19 | {"feishu_doc", "feishu_drive"},
    "yuanbao": DEFAULT_TOOLSETS_0_19 | {"yuanbao"},
    "webhook": frozenset({"clarify", "vision", "web"}),
    "api_server": DEFAULT_TOOLSETS_0_19 - {"clarify", "computer_use", "tts"},
}
NO_MCP = "no_mcp"


def default_toolsets(platform: str) -> frozenset[str]:
    """The toolsets Hermes 0.19.0 gives `platform` when nothing is pinned there (less `kanban`)."""
    return _PLATFORM_DEFAULTS.get(platform, DEFAULT_TOOLSETS_0_19)


# Strictness of `approvals.mode`: a higher rank asks the user less.
_APPROVAL_RANK = {"manual": 0, "smart": 1, "off": 2}
DEFAULT_APPROVALS_MODE = "smart"
DEFAULT_CRON_APPROVALS = "deny"


def approvals_mode(value: Any) -> str:
    """`approvals.mode` as Hermes reads it (tools/approval.py `_normalize_approval_mode`)."""
    if value is None:
        return DEFAULT_APPROVALS_MODE
    if isinstance(value, bool):
        return "off" if value is False else "manual"
    text = str(value).strip().lower()
    return text if text in _APPROVAL_RANK else "manual"


def approvals_rank(value: Any) -> int:
    return _APPROVAL_RANK[approvals_mode(value)]


def cron_approvals(value: Any) -> str:
    """`approvals.cron_mode` as Hermes reads it (tools/approval.py `_get_cron_approval_mode`):
    `approve` lets routines run dangerous commands unasked. Hermes reads `str(value)`, so a YAML
    boolean (`off` unquoted is False) is "false": deny."""
    if value is None:
        return DEFAULT_CRON_APPROVALS
    text = str(value).strip().lower()
    return "approve" if text in {"approve", "off", "allow", "yes"} else "deny"
