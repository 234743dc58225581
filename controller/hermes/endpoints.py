"""Which model providers of Hermes 0.19.0 send requests to `model.base_url` (pure facts).

docs/hermes/no-effect.md#model-base-url: `hermes_cli/runtime_provider.py:resolve_runtime_provider`
honours `model.base_url` only for `custom` (and the names that resolve to it), an unset or `auto`
provider, `azure-foundry`, `lmstudio`, and an API-key provider named by its own id (it compares the
raw `model.provider` with the id, so an alias such as `glm` loses the URL). `anthropic` honours it
only for an endpoint that speaks Anthropic's Messages protocol. Every other provider (`openrouter`
first of all) sends to its own endpoint and drops the URL without a word. Checked against the
installed 0.19.0 by tests/compat/test_endpoints_hermes.py.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from controller.hermes import providers

# API-key providers whose own id carries model.base_url (the credential pool's endpoint wins for xai
# and copilot, and _resolve_openrouter_runtime ignores it for openrouter).
HONOURED_BY_ID = frozenset(providers.API_KEY_PROVIDERS) - {"anthropic", "copilot", "openrouter", "xai"}
# Names that hermes_cli/auth.py:resolve_provider turns into `custom`, which trusts model.base_url.
CUSTOM_NAMES = frozenset({"custom"} | {alias for alias, target in providers.ALIASES.items() if target == "custom"})
ANTHROPIC_HOST_SUFFIXES = (".anthropic.com", ".claude.com", ".azure.com")


def ignored_reason(provider: str | None, base_url: str) -> str | None:
    """Why Hermes 0.19.0 sends nothing to `base_url` for `provider`; None when it does, or when the
    provider is one this table does not know (an OAuth or plugin provider: not measured)."""
    name = str(provider or "").strip().lower()
    if name in ("", "auto") or name in CUSTOM_NAMES or name in HONOURED_BY_ID:
        return None
    canonical = providers.canonical(name)
    if name == "anthropic":
        if _speaks_anthropic(base_url):
            return None
        return (
            "provider 'anthropic' honours model.base_url only for an endpoint that speaks Anthropic's Messages "
            "API (an *.anthropic.com, *.claude.com or *.azure.com host, or a path ending in /anthropic); "
            "Hermes 0.19.0 sends this bot's requests to https://api.anthropic.com"
        )
    if canonical in HONOURED_BY_ID or canonical == "anthropic":
        return (
            f"Hermes 0.19.0 honours model.base_url only when model.provider is the provider's own id; "
            f"{name!r} is an alias of {canonical!r}, so the URL is dropped"
        )
    if canonical == "openrouter":
        return "Hermes 0.19.0 ignores model.base_url for provider 'openrouter' and sends to https://openrouter.ai/api/v1"
    if canonical in providers.API_KEY_PROVIDERS or canonical == "bedrock":
        return f"Hermes 0.19.0 ignores model.base_url for provider {canonical!r} and sends to that provider's own endpoint"
    return None


def _speaks_anthropic(base_url: str) -> bool:
    """runtime_provider.py:_anthropic_base_url_override_ok (0.19.0)."""
    try:
        parts = urlsplit(base_url.strip() if "://" in base_url else f"//{base_url.strip()}")
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if not host:
        return False
    if host == "api.anthropic.com" or host.endswith(ANTHROPIC_HOST_SUFFIXES):
        return True
    path = parts.path.lower().rstrip("/")
    return path.endswith(("/anthropic", "/anthropic/v1")) or (host == "api.kimi.com" and "/coding" in base_url.lower())
