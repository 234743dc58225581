"""Which credentials a Hermes 0.19.0 model provider reads (pure facts).

docs/hermes/runtime.md#credentials: an API-key provider takes the first non-empty of its
environment keys (a bot's own `.env` is loaded into its environment), else an entry of its
credential pool in `auth.json`; OAuth providers keep their tokens in `auth.json`. Checked against
Hermes' own `hermes_cli/auth.py:PROVIDER_REGISTRY` and `resolve_provider` by
tests/compat/test_health_hermes.py.
"""

from __future__ import annotations

# PROVIDER_REGISTRY entries with auth_type "api_key": the env keys, in Hermes' order.
API_KEY_PROVIDERS: dict[str, tuple[str, ...]] = {
    "alibaba": ("DASHSCOPE_API_KEY",),
    "alibaba-coding-plan": ("ALIBABA_CODING_PLAN_API_KEY", "DASHSCOPE_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "arcee": ("ARCEEAI_API_KEY",),
    "azure-foundry": ("AZURE_FOUNDRY_API_KEY",),
    "copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "gmi": ("GMI_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "kilocode": ("KILOCODE_API_KEY",),
    "kimi-coding": ("KIMI_API_KEY", "KIMI_CODING_API_KEY"),
    "kimi-coding-cn": ("KIMI_CN_API_KEY",),
    "lmstudio": ("LM_API_KEY",),
    "minimax": ("MINIMAX_API_KEY",),
    "minimax-cn": ("MINIMAX_CN_API_KEY",),
    "novita": ("NOVITA_API_KEY",),
    "nvidia": ("NVIDIA_API_KEY",),
    "ollama-cloud": ("OLLAMA_API_KEY",),
    "openai-api": ("OPENAI_API_KEY",),
    "opencode-go": ("OPENCODE_GO_API_KEY",),
    "opencode-zen": ("OPENCODE_ZEN_API_KEY",),
    "stepfun": ("STEPFUN_API_KEY",),
    "tencent-tokenhub": ("TOKENHUB_API_KEY",),
    "upstage": ("UPSTAGE_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "xiaomi": ("XIAOMI_API_KEY",),
    "zai": ("GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"),
    # Not in the registry: hermes_cli/runtime_provider.py resolves it itself, OPENROUTER_API_KEY
    # first, then OPENAI_API_KEY.
    "openrouter": ("OPENROUTER_API_KEY", "OPENAI_API_KEY"),
}
# Tokens only in auth.json (`providers.<id>` or `credential_pool.<id>`).
OAUTH_PROVIDERS = frozenset({"nous", "openai-codex", "qwen-oauth", "xai-oauth", "minimax-oauth"})
# Credentials hermes-fleet cannot see: the AWS chain, an external process, any custom endpoint.
UNCHECKED_PROVIDERS = frozenset({"bedrock", "copilot-acp", "custom"})

# resolve_provider's aliases (its own table plus the model-provider plugins'), 0.19.0.
ALIASES: dict[str, str] = {
    "alibaba-cloud": "alibaba", "dashscope": "alibaba", "qwen-dashscope": "alibaba",
    "alibaba-coding": "alibaba-coding-plan", "alibaba_coding": "alibaba-coding-plan",
    "alibaba_coding_plan": "alibaba-coding-plan", "dashscope-coding": "alibaba-coding-plan",
    "amazon": "bedrock", "amazon-bedrock": "bedrock", "aws": "bedrock", "aws-bedrock": "bedrock",
    "arcee-ai": "arcee", "arceeai": "arcee",
    "azure": "azure-foundry", "azure-ai": "azure-foundry", "azure-ai-foundry": "azure-foundry",
    "claude": "anthropic", "claude-code": "anthropic", "claude-oauth": "anthropic",
    "codex": "openai-codex", "openai_codex": "openai-codex",
    "copilot-acp-agent": "copilot-acp", "github-copilot-acp": "copilot-acp",
    "deep-infra": "deepinfra", "deepinfra-ai": "deepinfra", "deepseek-chat": "deepseek",
    "fireworks-ai": "fireworks", "fw": "fireworks",
    "github": "copilot", "github-copilot": "copilot", "github-model": "copilot", "github-models": "copilot",
    "glm": "zai", "z-ai": "zai", "z.ai": "zai", "zhipu": "zai",
    "gmi-cloud": "gmi", "gmicloud": "gmi",
    "go": "opencode-go", "opencode-go-sub": "opencode-go", "opencode_go": "opencode-go",
    "opencode": "opencode-zen", "opencode_zen": "opencode-zen", "zen": "opencode-zen",
    "google": "gemini", "google-ai-studio": "gemini", "google-gemini": "gemini",
    "grok": "xai", "x-ai": "xai", "x.ai": "xai",
    "grok-oauth": "xai-oauth", "x-ai-oauth": "xai-oauth", "xai-grok-oauth": "xai-oauth",
    "hf": "huggingface", "hugging-face": "huggingface", "huggingface-hub": "huggingface",
    "kilo": "kilocode", "kilo-code": "kilocode", "kilo-gateway": "kilocode",
    "kimi": "kimi-coding", "kimi-for-coding": "kimi-coding", "moonshot": "kimi-coding",
    "kimi-cn": "kimi-coding-cn", "moonshot-cn": "kimi-coding-cn",
    "llama-cpp": "custom", "llama.cpp": "custom", "llamacpp": "custom", "local": "custom", "ollama": "custom",
    "vllm": "custom",
    "lm-studio": "lmstudio", "lm_studio": "lmstudio",
    "mimo": "xiaomi", "xiaomi-mimo": "xiaomi",
    "mini-max": "minimax", "minimax-china": "minimax-cn", "minimax_cn": "minimax-cn",
    "minimax-global": "minimax-oauth", "minimax-oauth-io": "minimax-oauth", "minimax-portal": "minimax-oauth",
    "minimax_oauth": "minimax-oauth",
    "nous-portal": "nous", "nousresearch": "nous",
    "novita-ai": "novita", "novitaai": "novita", "nvidia-nim": "nvidia", "ollama_cloud": "ollama-cloud",
    "or": "openrouter",
    "qwen": "qwen-oauth", "qwen-cli": "qwen-oauth", "qwen-portal": "qwen-oauth",
    "solar": "upstage",
    "step": "stepfun", "stepfun-coding-plan": "stepfun",
    "tencent": "tencent-tokenhub", "tencent-cloud": "tencent-tokenhub", "tencentmaas": "tencent-tokenhub",
    "tokenhub": "tencent-tokenhub",
}  # fmt: skip


def canonical(provider: str | None) -> str | None:
    """The provider id Hermes resolves `model.provider` to; None for unset or `auto`."""
    if provider is None:
        return None
    name = str(provider).strip().lower()
    if name in ("", "auto"):
        return None
    return ALIASES.get(name, name)


def credential_keys(provider: str | None) -> tuple[str, ...] | None:
    """The env keys any of which gives `provider` its credential; None when it takes none from env.

    For an unset provider (`auto`), Hermes picks the first provider whose key it finds, so any
    API key of any provider will do.
    """
    name = canonical(provider)
    if name is None:
        seen: dict[str, None] = {}
        for keys in API_KEY_PROVIDERS.values():
            seen.update(dict.fromkeys(keys))
        return tuple(seen)
    return API_KEY_PROVIDERS.get(name)
