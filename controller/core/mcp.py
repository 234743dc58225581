"""The MCP servers a fleet declares, and whether the Hermes that runs its bots can start them (pure).

Hermes starts no MCP server when its Python has no `mcp` library (`discover_mcp_tools()` returns
nothing), and the stock `hermes-agent` wheel does not bring it: the `hermes-agent[mcp]` extra does
(docs/hermes/no-effect.md#mcp-library). The engine asks that Python once (Observed.mcp_library);
`plan` notes the answer, each MCP widening carries it, and `status` reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.manifests.desired import DesiredState

PREFIX = "mcp_servers."
EXTRA = "hermes-agent[mcp]"
NOT_STARTED = "not started: the Hermes environment has no mcp library"


def enabled(server: Any) -> bool:
    """Hermes' own test: `enabled` defaults to true (tools/mcp_tool.py:discover_mcp_tools)."""
    return isinstance(server, Mapping) and server.get("enabled", True) not in (False, 0, "false", "no", "off")


def declared(state: DesiredState) -> dict[str, tuple[str, ...]]:
    """bot -> the names of its enabled MCP servers (bots without one are left out)."""
    out = {}
    for name, bot in state.bots.items():
        servers = tuple(sorted(k[len(PREFIX) :] for k, v in bot.config.items() if k.startswith(PREFIX) and enabled(v)))
        if servers:
            out[name] = servers
    return out


def plan_note(state: DesiredState, available: bool | None, where: str) -> str | None:
    """One note per fleet when its MCP servers cannot start, or when that could not be told."""
    bots = declared(state)
    if not bots or available is True:
        return None
    names = sorted({s for servers in bots.values() for s in servers})
    listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    if available is None:
        return (
            f"could not tell whether the Hermes that runs these bots can start MCP servers ({where}); Hermes starts "
            f"none without the mcp library ({EXTRA}): {len(bots)} bot(s) declare {listed}"
        )
    return (
        f"warning: the Hermes environment that runs these bots ({where}) has no mcp library, so Hermes starts no MCP "
        f"server: {len(bots)} bot(s) declare {listed}, and none of them will run; install {EXTRA} into that "
        "environment (the Ansible role does when a bot declares one)"
    )
