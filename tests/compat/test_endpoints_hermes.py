"""`controller/hermes/endpoints.py` against the real hermes-agent 0.19.0: for every provider name
the table knows, Hermes' own `resolve_runtime_provider` is asked where a bot with
`model: {provider: <name>, base_url: <url>}` sends its requests, and the table must agree on
whether the URL is used (docs/hermes/no-effect.md#model-base-url)."""

from __future__ import annotations

import json

import pytest

from controller.hermes import endpoints, providers
from tests.hermes_support import HermesCLI

pytestmark = pytest.mark.hermes

URLS = ("https://llm.example.net/v1", "https://llm.example.net/anthropic")
# Asks Hermes, per name and URL, which base_url the runtime resolves; every API key is set, so no
# provider fails for want of one (an OAuth provider without a login raises: reported as None).
PROBE = """
import json, os, sys
import yaml
from hermes_cli import runtime_provider
names, urls, keys = json.loads(sys.stdin.read())
for key in keys:
    os.environ[key] = "sk-test-0123456789abcdef"
out = {}
for name in names:
    for url in urls:
        with open(os.path.join(os.environ["HERMES_HOME"], "config.yaml"), "w") as handle:
            yaml.safe_dump({"model": {"provider": name, "default": "m", "base_url": url}}, handle)
        try:
            got = runtime_provider.resolve_runtime_provider().get("base_url") or ""
        except Exception:
            got = None
        out[name + " " + url] = got
print(json.dumps(out))
"""


def test_the_providers_that_honour_model_base_url_are_hermes_own(hermes: HermesCLI) -> None:
    names = sorted(set(providers.API_KEY_PROVIDERS) | set(providers.ALIASES) | {"custom", "auto", "bedrock"})
    keys = sorted({k for ks in providers.API_KEY_PROVIDERS.values() for k in ks})
    run = hermes.python(PROBE, input=json.dumps([names, URLS, keys]), timeout=300)
    resolved = json.loads(run.stdout.strip().splitlines()[-1])
    disagree = []
    for name in names:
        for url in URLS:
            got = resolved[f"{name} {url}"]
            if got is None:  # Hermes could not resolve it at all (a login is missing): nothing measured
                continue
            # lmstudio normalises the path it is given (adds /v1); the host is what it keeps.
            honoured = got.rstrip("/").startswith(url.rstrip("/").removesuffix("/v1"))
            said = endpoints.ignored_reason(name, url) is None
            if honoured != said:
                disagree.append(f"{name} {url}: Hermes sends to {got}, the table says {'honoured' if said else 'ignored'}")
    assert disagree == []
    assert endpoints.ignored_reason("openrouter", URLS[0]) is not None  # the case the issue met
