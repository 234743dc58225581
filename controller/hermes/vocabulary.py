"""The names Hermes 0.19.0 accepts for toolsets, model providers and enum-valued config keys (pure).

Each table restates one registry or reader of hermes-agent 0.19.0 (docs/hermes/vocabulary.md says
which); tests/adapters/test_hermes_vocabulary.py compares every table with the installed Hermes,
so a new Hermes version that adds or drops a name fails that test instead of going stale here.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.hermes import providers

# toolsets.py TOOLSETS, plus the toolset the tool registry adds when the tools load (browser-cdp):
# what `toolsets.validate_toolset` accepts besides its `all`/`*` aliases.
TOOLSETS_0_19 = frozenset({
    "browser", "browser-cdp", "clarify", "code_execution", "coding", "computer_use", "context_engine", "cronjob",
    "debugging", "delegation", "discord", "discord_admin", "feishu_doc", "feishu_drive", "file", "hermes-acp",
    "hermes-api-server", "hermes-bluebubbles", "hermes-cli", "hermes-cron", "hermes-dingtalk", "hermes-discord",
    "hermes-email", "hermes-feishu", "hermes-gateway", "hermes-homeassistant", "hermes-matrix", "hermes-mattermost",
    "hermes-qqbot", "hermes-signal", "hermes-slack", "hermes-sms", "hermes-telegram", "hermes-webhook", "hermes-wecom",
    "hermes-wecom-callback", "hermes-weixin", "hermes-whatsapp", "hermes-yuanbao", "homeassistant", "image_gen",
    "kanban", "memory", "project", "safe", "search", "session_search", "skills", "spotify", "terminal", "todo", "tts",
    "video", "video_gen", "vision", "web", "x_search", "yuanbao",
})  # fmt: skip
TOOLSET_WILDCARDS = frozenset({"all", "*"})  # validate_toolset's aliases for every toolset
NO_MCP = "no_mcp"  # hermes_cli/tools_config.py:_get_platform_tools: drops every MCP server


def toolset_known(name: str, mcp_servers: frozenset[str] = frozenset()) -> bool:
    """Whether a toolset list entry names something Hermes resolves: a toolset, a wildcard,
    `no_mcp`, or (an MCP allowlist) one of the bot's own MCP servers."""
    return name in TOOLSETS_0_19 or name in TOOLSET_WILDCARDS or name == NO_MCP or name in mcp_servers


def toolset_choices(mcp_servers: frozenset[str] = frozenset()) -> frozenset[str]:
    return TOOLSETS_0_19 | TOOLSET_WILDCARDS | {NO_MCP} | mcp_servers


# hermes_cli/auth.py:resolve_provider: `openrouter`, `custom`, PROVIDER_REGISTRY's ids and the
# aliases; hermes_cli/runtime_provider.py:resolve_requested_provider adds `auto` (pick by keys).
PROVIDERS_0_19 = frozenset(
    {"auto", "openrouter", "custom"}
    | set(providers.API_KEY_PROVIDERS)
    | providers.OAUTH_PROVIDERS
    | providers.UNCHECKED_PROVIDERS
)
# hermes_cli/runtime_provider.py:resolve_runtime_provider takes Vertex AI by these names before
# resolve_provider (which does not know them); the model-provider plugin lists all but `vertexai`.
VERTEX = frozenset({"vertex", "google-vertex", "vertex-ai", "gcp-vertex", "vertexai"})
CUSTOM_PREFIX = "custom:"  # `custom:<name>`: a providers:/custom_providers: entry of the bot's config


def provider_known(name: str, custom: frozenset[str] = frozenset()) -> bool:
    """Whether `model.provider` (or a routine's provider) resolves in Hermes 0.19.0: a built-in
    provider or alias (any case, as resolve_provider lower-cases), `custom:<name>`, or the name of
    a `providers:`/`custom_providers:` entry declared in the same config (`custom`)."""
    text = name.strip().lower()
    return (
        text in PROVIDERS_0_19 or text in providers.ALIASES or text in VERTEX or text.startswith(CUSTOM_PREFIX) or text in custom
    )


def provider_choices() -> frozenset[str]:
    return PROVIDERS_0_19 | frozenset(providers.ALIASES) | VERTEX


@dataclass(frozen=True)
class Enum:
    """A config key whose reader takes one of `values`; anything else it ignores or refuses."""

    values: tuple[str, ...]
    reader: str  # the 0.19.0 function that reads the key
    otherwise: str  # what that reader does with any other value, as a phrase after its name
    fold: bool = True  # the reader strips and lower-cases the value first
    booleans: bool = False  # the reader also gives YAML true/false a meaning


# tools/tts_tool.py BUILTIN_TTS_PROVIDERS, in the manifest's documented order.
TTS_PROVIDERS = (
    "edge",
    "elevenlabs",
    "openai",
    "gemini",
    "xai",
    "mistral",
    "minimax",
    "kittentts",
    "neutts",
    "piper",
    "deepinfra",
)

ENUMS: dict[str, Enum] = {
    "approvals.mode": Enum(
        ("manual", "smart", "off"),
        "tools/approval.py:_normalize_approval_mode",
        "reads any other string as 'manual', false as 'off' and true as 'manual'",
        booleans=True,
    ),
    "approvals.cron_mode": Enum(
        ("deny", "approve", "off", "allow", "yes"),
        "tools/approval.py:_get_cron_approval_mode",
        "reads anything else as 'deny', true and false included",
    ),
    "tts.provider": Enum(TTS_PROVIDERS, "tools/tts_tool.py:_get_provider", "looks any other name up as a plugin provider"),
    "code_execution.mode": Enum(
        ("project", "strict"), "tools/code_execution_tool.py:_get_execution_mode", "reads any other value as 'project'"
    ),
    "display.busy_input_mode": Enum(
        ("interrupt", "queue", "steer"), "gateway/run.py:_load_busy_input_mode", "reads any other value as 'interrupt'"
    ),
    "browser.dialog_policy": Enum(
        ("must_respond", "auto_dismiss", "auto_accept"),
        "tools/browser_supervisor.py:_VALID_POLICIES",
        "refuses any other value when the browser starts",
        fold=False,
    ),
}


def enum_problem(key: str, value: object) -> Enum | None:
    """The Enum `value` breaks at `key` (None when it fits, or `key` is not enum-valued)."""
    spec = ENUMS.get(key)
    if spec is None or value is None:
        return None
    if isinstance(value, bool):
        return None if spec.booleans else spec
    if not isinstance(value, str):
        return spec
    text = value.strip().lower() if spec.fold else value
    return None if text in spec.values else spec
