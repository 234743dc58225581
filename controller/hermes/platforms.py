"""Where a bot's tools are chosen: Hermes resolves them per platform (docs/hermes/files.md#toolsets).

`platform_toolsets.<platform>` is the only key Hermes' tool resolver reads; the top-level
`toolsets:` key picks nothing. A manifest's `toolsets: [web, file]` is therefore written as that
list for every platform a bot can run on, `cron` (its routines) and `cli` (the CLI, the TUI, the
Desktop) included, so the bot has those tools wherever it runs.
"""

from __future__ import annotations

# hermes_cli/platforms.py PLATFORMS in hermes-agent 0.19.0, in Hermes' order.
PLATFORMS_0_19 = (
    "cli", "telegram", "discord", "slack", "whatsapp", "whatsapp_cloud", "signal", "bluebubbles", "email",
    "homeassistant", "mattermost", "matrix", "dingtalk", "feishu", "wecom", "wecom_callback", "weixin", "qqbot",
    "yuanbao", "webhook", "api_server", "cron",
)  # fmt: skip

TOOLSETS_KEY = "platform_toolsets"


_KEYS = {platform: f"{TOOLSETS_KEY}.{platform}" for platform in PLATFORMS_0_19}


def toolset_keys(toolsets: list[str], platforms: tuple[str, ...] = PLATFORMS_0_19) -> dict[str, list[str]]:
    """The config keys that give a bot exactly `toolsets` on every platform (plus what Hermes adds).
    One list for all the platforms (a value, never changed in place): at 10,000 bots, 22 copies
    per bot were 30 MB."""
    shared = list(toolsets)
    if platforms is PLATFORMS_0_19:
        return dict.fromkeys(_KEYS.values(), shared)  # the same dict, built in C (one per bot)
    return {_KEYS.get(platform) or f"{TOOLSETS_KEY}.{platform}": shared for platform in platforms}
