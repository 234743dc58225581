"""A grammar of Fleet manifests for the whole-pipeline property (validate predicts apply).

Each example is one Fleet document: install-wide settings, sections, peers and 1-3 bots whose
fields are drawn from valid values, near misses and hostile scalars (huge and non-finite numbers,
control characters, line breaks, NUL, `${...}`, a trailing backslash, an embedded `KEY=`, very long
and non-ASCII text, empty and dotted keys, deep nesting). It is written as YAML text by `to_yaml`
(flow style, JSON-escaped strings, YAML's `.nan`/`.inf`), so the loader sees what a person could
write. What needs this machine rather than the manifest (an unset from_env variable, a workdir
missing here, a clone source missing in the home, a gateway for rooms) is left out: those are
checked where they can be, when apply runs (docs/reliability.md, "validate predicts apply").
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

SECRET_VAR = "HF_PROPERTY_SECRET"  # the only from_env variable: set by the test
SECRET_VALUE = "sk-property-0123456789"

HOSTILE_TEXT = [
    "",
    " ",
    "plain",
    "two\nlines",
    "carriage\rreturn",
    "nul\x00byte",
    "tab\there",
    "${HOME}",
    "a${X:-y}b",
    "ends with a backslash\\",
    "quote\"and'apostrophe",
    "hash # not a comment",
    "OTHER_KEY=value",
    "x OTHER_KEY=value",
    "https://h/?A_B=c",
    "\x1b[31mred\x07",
    "\u2028line separator",
    "\x85next line",
    "\ufeffbom",
    "caf\u00e9",
    "\U0001f916 robot",
    "0755",
    "1e3",
    "off",
    "yes",
    "null",
    "~",
    "-",
    ":",
    "- item",
    "key: value",
    "[flow]",
    "{flow: map}",
    "*alias",
    "&anchor",
    "!tag",
    "%percent",
    "@at",
    "`back`",
    "2030-01-02",
    "12:30",
    "=",
    "<<",
    "x" * 300,
]
NUMBERS: list[Any] = [0, -1, 1, 7, 2**31, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**30, 1.5, -0.0, 1e16, 1e300, 1e400]
FLOATS_SPECIAL = [math.nan, math.inf, -math.inf]

# Values a careful person writes (validation may still refuse some: a title that collides, text
# a .env cannot carry): about half the examples draw only these, the other half hostile ones too.
CALM_KEYS = ["timezone", "agent.max_turns", "display.compact", "custom.nested.key", "memory", "approvals.mode", "x_y"]
calm_text = st.text(max_size=30)
calm_scalar = st.one_of(
    calm_text,
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["off", "on", "yes", "0755", "1e3", "null", "~", "2030-01-02", "12:30", "=", "<<"]),
)
calm_key = st.one_of(st.sampled_from(CALM_KEYS), st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=10))

scalar_text = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=40))
hostile_scalar = st.one_of(
    scalar_text,
    st.sampled_from(NUMBERS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(FLOATS_SPECIAL),
    st.booleans(),
    st.none(),
)
hostile_key = st.one_of(
    st.sampled_from(["a", "b.c", "a..b", ".x", "x.", "timezone", "agent.max_turns", "display", "api_key", "-", "<<", "~"]),
    st.text(min_size=1, max_size=12),
)


def nested(hostile: bool) -> st.SearchStrategy[Any]:
    leaf = hostile_scalar if hostile else calm_scalar
    key = hostile_key if hostile else calm_key
    return st.recursive(
        leaf, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(key, inner, max_size=4)), max_leaves=12
    )


CALM_NAMES = ["alpha", "beta", "gamma", "default", "d-1", "x_y"]
HOSTILE_NAMES = ["Alpha", "bad name", "x" * 70, "hermes", "a\n", ""]
ENV_KEYS = ["LOG_LEVEL", "APP_MODE", "lower_case", "OPENAI_API_KEY", "GITHUB_TOKEN"]
HOSTILE_ENV_KEYS = ["PATH", "LD_PRELOAD", "1BAD", "A-B", ""]
SCHEDULES = ["every 30m", "0 8 * * 1-5", "every 1m", "2099-01-02T03:04", "30m"]
HOSTILE_SCHEDULES = ["@daily", "0 8 * * MON", "every 0m", "", "61 * * * *"]
TOOLSETS = ["web", "terminal", "file"]
PROVIDERS = ["openrouter", "anthropic", "custom"]


@st.composite
def env_maps(draw: st.DrawFn, hostile: bool) -> dict[str, Any]:
    keys = ENV_KEYS + (HOSTILE_ENV_KEYS if hostile else [])
    out: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            out[key] = {"from_env": SECRET_VAR}
        elif kind == 1 and hostile:
            out[key] = {"from_env": draw(st.sampled_from(["lower", "1X"]))}
        else:
            out[key] = draw(hostile_scalar if hostile else calm_scalar)
    return out


@st.composite
def routines(draw: st.DrawFn, hostile: bool) -> list[dict[str, Any]]:
    out = []
    text = scalar_text if hostile else calm_text
    for i in range(draw(st.integers(0, 2))):
        routine: dict[str, Any] = {
            "name": draw(st.one_of(st.just(f"Job {i}"), text)),
            "schedule": draw(st.sampled_from(SCHEDULES + (HOSTILE_SCHEDULES if hostile else []))),
            "prompt": draw(st.one_of(st.just("Summarize the news."), text)),
        }
        if draw(st.integers(0, 4)) == 0:
            routine["workdir"] = draw(st.sampled_from(["/tmp", "relative/dir", "~", ""] if hostile else ["/tmp"]))
        if draw(st.integers(0, 4)) == 0:
            routine["repeat"] = draw(st.sampled_from([1, 3, 0, -1, 2**64] if hostile else [1, 3]))
        if draw(st.integers(0, 4)) == 0:
            routine["paused"] = draw(st.booleans())
        out.append(routine)
    return out


@st.composite
def bots(draw: st.DrawFn, name: str, hostile: bool) -> dict[str, Any]:
    text = scalar_text if hostile else calm_text
    bot: dict[str, Any] = {"name": name}
    fields = {
        "title": st.one_of(st.just(f"Title {name}"), text),
        "description": text,
        "display_name": st.one_of(st.just(f"Display {name}"), text),
        "soul": text,
        "hidden": st.one_of(st.booleans(), hostile_scalar) if hostile else st.booleans(),
        "pinned": st.booleans(),
        "section": st.sampled_from(["Team", "Nowhere", ""] if hostile else ["Team"]),
        "toolsets": st.lists(st.sampled_from(TOOLSETS + (["", " web", "x" * 80] if hostile else [])), max_size=3),
        "model": st.fixed_dictionaries(
            {"provider": st.sampled_from(PROVIDERS + ([""] if hostile else []))}, optional={"default": text}
        ),
        "env": env_maps(hostile),
        "config": st.dictionaries(hostile_key if hostile else calm_key, nested(hostile), max_size=4),
        "routines": routines(hostile),
        "avatar": st.sampled_from(
            [{"kind": "blob", "seed": "s1"}, {"shape": "hexagon", "color": "#8b5cf6"}]
            + ([{"shape": "star"}, {"seed": "a b"}] if hostile else [])
        ),
        "checkpoints": st.fixed_dictionaries(
            {}, optional={"enabled": st.booleans(), "max_snapshots": st.sampled_from(NUMBERS if hostile else [1, 10])}
        ),
        "create_empty": st.booleans(),
    }
    for field in draw(st.lists(st.sampled_from(sorted(fields)), max_size=6, unique=True)):
        bot[field] = draw(fields[field])
    if hostile and draw(st.integers(0, 9)) == 0:
        bot[draw(hostile_key)] = draw(nested(True))  # an unknown field
    return bot


@st.composite
def fleets(draw: st.DrawFn, hostile: bool | None = None) -> dict[str, Any]:
    """A Fleet document; `hostile` None: drawn (about half the examples)."""
    if hostile is None:
        hostile = draw(st.booleans())
    pool = CALM_NAMES + (HOSTILE_NAMES if hostile else [])
    names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
    spec: dict[str, Any] = {"sections": [{"name": "Team"}], "bots": [draw(bots(n, hostile)) for n in names]}
    if draw(st.booleans()):
        spec["config"] = draw(st.dictionaries(hostile_key if hostile else calm_key, nested(hostile), max_size=4))
    if draw(st.integers(0, 3)) == 0:
        hops = draw(st.sampled_from(NUMBERS if hostile else [1, 4]))
        spec["gateway"] = {"bot_loop_guard": {"enabled": draw(st.booleans()), "max_events": hops}}
    if draw(st.integers(0, 3)) == 0:
        urls = ["http://spark.lan:8642"] + (["https://u:p@spark.lan", "http://h/?token=abc", "ftp://x", ""] if hostile else [])
        peer = {"name": draw(st.sampled_from(["spark", "Spark"] if hostile else ["spark"])), "url": draw(st.sampled_from(urls))}
        spec["peers"] = [{**peer, "key": {"from_env": SECRET_VAR}}]
    if draw(st.integers(0, 3)) == 0:
        defaults_config = draw(st.dictionaries(hostile_key if hostile else calm_key, nested(hostile), max_size=3))
        spec["defaults"] = {"env": draw(env_maps(hostile)), "config": defaults_config}
    name = draw(st.sampled_from(["acme", "Acme", "acme\n", ""])) if hostile else "acme"
    return {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": name}, "spec": spec}


def to_yaml(value: Any) -> str:
    """Flow-style YAML: JSON for strings, ints, bools and null (JSON is YAML 1.2), YAML's own
    spelling for NaN and the infinities (which JSON cannot carry)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{to_yaml(str(k))}: {to_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(to_yaml(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return json.dumps(value, ensure_ascii=False)
