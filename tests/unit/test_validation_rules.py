"""Semantic validation rules, one table row per rule: a manifest that breaks the rule gets the
rule's diagnostic at the right field path, and a near-identical manifest that keeps it is clean."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.manifests import loading, validating

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def fleet(name: str = "acme", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": name}, "spec": spec}


def doc(kind: str, name: str, spec: dict[str, Any] | None = None, fleet_name: str | None = "acme") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if fleet_name:
        meta["fleet"] = fleet_name
    out: dict[str, Any] = {"apiVersion": "hermes-fleet/v1", "kind": kind, "metadata": meta}
    if spec is not None:
        out["spec"] = spec
    return out


def write_docs(folder: Path, name: str, *documents: dict[str, Any]) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON is YAML 1.2; indent=2 keeps one key per line, so locations are meaningful
    path.write_text("\n---\n".join(json.dumps(d, indent=2) for d in documents) + "\n", encoding="utf-8")
    return path


def check(
    folder: Path,
    *documents: dict[str, Any],
    files: dict[str, bytes] | None = None,
    fleet_flag: str | None = None,
) -> validating.ValidationResult:
    for rel, content in (files or {}).items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    write_docs(folder, "fleet.yaml", *documents)
    loaded, problems = loading.load_files(loading.discover([str(folder / "fleet.yaml")]))
    assert problems == []
    return validating.validate(loaded, fleet=fleet_flag, now=NOW)


def codes(result: validating.ValidationResult, severity: str = "error") -> set[tuple[str, str]]:
    return {(d.code, d.path) for d in result.diagnostics if d.severity == severity}


def rendered(result: validating.ValidationResult) -> str:
    return "\n".join(d.render() for d in result.diagnostics)


# --- the rule table ------------------------------------------------------------------------
# (bad spec, good spec, expected code, expected path, message fragment)

RULES = [
    # profile names
    pytest.param(
        {"bots": [{"name": "Researcher"}]},
        {"bots": [{"name": "researcher"}]},
        "name",
        "spec.bots[0].name",
        "write 'researcher'",
        id="name-upper-case",
    ),
    pytest.param(
        {"bots": [{"name": "-x"}]},
        {"bots": [{"name": "x-"}]},
        "name",
        "spec.bots[0].name",
        "^[a-z0-9][a-z0-9_-]{0,63}$",
        id="name-leading-dash",
    ),
    pytest.param(
        {"bots": [{"name": "a.b"}]},
        {"bots": [{"name": "a_b"}]},
        "name",
        "spec.bots[0].name",
        "not a valid profile name",
        id="name-dot",
    ),
    pytest.param(
        {"bots": [{"name": "x" * 65}]},
        {"bots": [{"name": "x" * 64}]},
        "name",
        "spec.bots[0].name",
        "1-64 characters",
        id="name-too-long",
    ),
    pytest.param(
        {"bots": [{"name": " padded"}]},
        {"bots": [{"name": "padded"}]},
        "name",
        "spec.bots[0].name",
        "strips",
        id="name-whitespace",
    ),
    *[
        pytest.param(
            {"bots": [{"name": reserved}]},
            {"bots": [{"name": f"{reserved}2"}]},
            "reserved_name",
            "spec.bots[0].name",
            "reserved by Hermes",
            id=f"reserved-{reserved}",
        )
        for reserved in ("hermes", "test", "tmp", "root", "sudo")
    ],
    pytest.param(
        {"bots": [{"name": "default", "create_empty": True}]},
        {"bots": [{"name": "default", "title": "Main", "description": "the root"}]},
        "default_profile",
        "spec.bots[0].create_empty",
        "never created",
        id="default-is-not-created",
    ),
    pytest.param(
        {"bots": [{"name": "default", "clone_from": "other"}]},
        {"bots": [{"name": "x", "clone_from": "other"}]},
        "default_profile",
        "spec.bots[0].clone_from",
        "never created",
        id="default-is-not-cloned",
    ),
    pytest.param(
        {"bots": [{"name": "a", "clone_from": "a"}]},
        {"bots": [{"name": "a", "clone_from": "b"}]},
        "reference",
        "spec.bots[0].clone_from",
        "cloned from itself",
        id="clone-from-self",
    ),
    pytest.param(
        {"bots": [{"name": "a", "clone_from": "B!"}]},
        {"bots": [{"name": "a", "clone_from": "b"}]},
        "name",
        "spec.bots[0].clone_from",
        "not a valid profile name",
        id="clone-from-invalid",
    ),
    # duplicates inside one document
    pytest.param(
        {"bots": [{"name": "a"}, {"name": "a"}]},
        {"bots": [{"name": "a"}, {"name": "b"}]},
        "duplicate",
        "spec.bots[1].name",
        "bot 'a' is declared twice",
        id="duplicate-bot",
    ),
    pytest.param(
        {"sections": [{"name": "T"}, {"name": "T"}]},
        {"sections": [{"name": "T"}, {"name": "U"}]},
        "duplicate",
        "spec.sections[1].name",
        "section 'T' is declared twice",
        id="duplicate-section",
    ),
    pytest.param(
        {"peers": [{"name": "p", "url": "http://a"}, {"name": "p", "url": "http://b"}]},
        {"peers": [{"name": "p", "url": "http://a"}, {"name": "q", "url": "http://b"}]},
        "duplicate",
        "spec.peers[1].name",
        "peer 'p' is declared twice",
        id="duplicate-peer",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}, {"name": "b"}],
            "rooms": [{"name": "R", "members": ["a", "b"]}, {"name": "R", "members": ["b", "a"]}],
        },
        {
            "bots": [{"name": "a"}, {"name": "b"}],
            "rooms": [{"name": "R", "members": ["a", "b"]}, {"name": "S", "members": ["b", "a"]}],
        },
        "duplicate",
        "spec.rooms[1].name",
        "room 'R' is declared twice",
        id="duplicate-room",
    ),
    pytest.param(
        {
            "bots": [
                {
                    "name": "a",
                    "routines": [
                        {"name": "r", "schedule": "every 1h", "prompt": "x"},
                        {"name": "r", "schedule": "every 2h", "prompt": "y"},
                    ],
                }
            ]
        },
        {
            "bots": [
                {
                    "name": "a",
                    "routines": [
                        {"name": "r", "schedule": "every 1h", "prompt": "x"},
                        {"name": "s", "schedule": "every 2h", "prompt": "y"},
                    ],
                }
            ]
        },
        "duplicate",
        "spec.bots[0].routines[1].name",
        "two routines named 'r'",
        id="duplicate-routine",
    ),
    pytest.param(
        {
            "bots": [
                {
                    "name": "a",
                    "routines": [
                        {"name": "new", "schedule": "every 1h", "prompt": "x", "renamed_from": "old"},
                        {"name": "old", "schedule": "every 2h", "prompt": "y"},
                    ],
                }
            ]
        },
        {
            "bots": [
                {
                    "name": "a",
                    "routines": [{"name": "new", "schedule": "every 1h", "prompt": "x", "renamed_from": "old"}],
                }
            ]
        },
        "reference",
        "spec.bots[0].routines[0].renamed_from",
        "still exists",
        id="renamed-from-still-there",
    ),
    # bot renames (renamed_from on a bot: docs/manifest.md#bot)
    pytest.param(
        {"bots": [{"name": "b", "renamed_from": "Old Bot"}]},
        {"bots": [{"name": "b", "renamed_from": "old-bot"}]},
        "name",
        "spec.bots[0].renamed_from",
        "not a valid profile name",
        id="bot-renamed-from-invalid",
    ),
    pytest.param(
        {"bots": [{"name": "b", "renamed_from": "default"}]},
        {"bots": [{"name": "b", "renamed_from": "a"}]},
        "default_profile",
        "spec.bots[0].renamed_from",
        "never renamed",
        id="bot-renamed-from-default",
    ),
    pytest.param(
        {"bots": [{"name": "default", "renamed_from": "a"}]},
        {"bots": [{"name": "default"}]},
        "default_profile",
        "spec.bots[0].renamed_from",
        "no bot is renamed into it",
        id="bot-renamed-to-default",
    ),
    pytest.param(
        {"bots": [{"name": "b", "renamed_from": "b"}]},
        {"bots": [{"name": "b"}]},
        "reference",
        "spec.bots[0].renamed_from",
        "renamed from itself",
        id="bot-renamed-from-self",
    ),
    pytest.param(
        {"bots": [{"name": "a"}, {"name": "b", "renamed_from": "a"}]},
        {"bots": [{"name": "b", "renamed_from": "a"}]},
        "reference",
        "spec.bots[1].renamed_from",
        "still declared",
        id="bot-renamed-from-still-declared",
    ),
    pytest.param(
        {"bots": [{"name": "b", "renamed_from": "a"}, {"name": "c", "renamed_from": "b"}]},
        {"bots": [{"name": "b", "renamed_from": "a"}, {"name": "c", "renamed_from": "x"}]},
        "rename_chain",
        "spec.bots[1].renamed_from",
        "chain of renames",
        id="bot-rename-chain",
    ),
    pytest.param(
        {"bots": [{"name": "b", "renamed_from": "a"}, {"name": "c", "renamed_from": "a"}]},
        {"bots": [{"name": "b", "renamed_from": "a"}, {"name": "c"}]},
        "duplicate",
        "spec.bots[1].renamed_from",
        "both renamed from 'a'",
        id="bot-renamed-twice",
    ),
    # rooms
    pytest.param(
        {"bots": [{"name": "a"}], "rooms": [{"name": "R", "members": ["a"]}]},
        {"bots": [{"name": "a"}, {"name": "b"}], "rooms": [{"name": "R", "members": ["a", "b"]}]},
        "room_members",
        "spec.rooms[0].members",
        "2-6 members, this one has 1",
        id="room-too-small",
    ),
    pytest.param(
        {"bots": [{"name": n} for n in "abcdefg"], "rooms": [{"name": "R", "members": list("abcdefg")}]},
        {"bots": [{"name": n} for n in "abcdefg"], "rooms": [{"name": "R", "members": list("abcdef")}]},
        "room_members",
        "spec.rooms[0].members",
        "this one has 7",
        id="room-too-big",
    ),
    pytest.param(
        {"bots": [{"name": "a"}, {"name": "b"}], "rooms": [{"name": "R", "members": ["a", "b", "a"]}]},
        {"bots": [{"name": "a"}, {"name": "b"}], "rooms": [{"name": "R", "members": ["a", "b"]}]},
        "room_members",
        "spec.rooms[0].members[2]",
        "listed twice",
        id="room-member-twice",
    ),
    pytest.param(
        {"bots": [{"name": "alpha"}, {"name": "b"}], "rooms": [{"name": "R", "members": ["alpah", "b"]}]},
        {"bots": [{"name": "alpha"}, {"name": "b"}], "rooms": [{"name": "R", "members": ["alpha", "b"]}]},
        "reference",
        "spec.rooms[0].members[0]",
        "did you mean 'alpha'?",
        id="room-member-unknown",
    ),
    pytest.param(
        {"bots": [{"name": "a"}], "rooms": [{"name": "R", "members": ["a", "spark/b"]}]},
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "https://spark.lan:8642", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/b"]}],
        },
        "reference",
        "spec.rooms[0].members[1]",
        "names peer 'spark', which is not declared",
        id="room-remote-member-needs-peer",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "https://s", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/Bad Name"]}],
        },
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "https://s", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/bad-name"]}],
        },
        "name",
        "spec.rooms[0].members[1]",
        "not a valid profile name",
        id="room-remote-profile-name",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "https://s"}],
            "rooms": [{"name": "R", "members": ["a", "spark/b"]}],
        },
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "https://s", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/b"]}],
        },
        "reference",
        "spec.rooms[0].members[1]",
        "has no key",
        id="room-remote-member-peer-needs-a-key",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/b"]}],
        },
        {
            "bots": [{"name": "a"}],
            "peers": [{"name": "spark", "url": "http://127.0.0.1:8642", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "spark/b"]}],
        },
        "url",
        "spec.rooms[0].members[1]",
        "only over https",
        id="room-remote-member-peer-needs-https",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}, {"name": "c"}],
            "peers": [{"name": "spark", "url": "https://s", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [{"name": "R", "members": ["a", "c", "spark/b"], "who_answers": "lead:a"}],
        },
        {
            "bots": [{"name": "a"}, {"name": "c"}],
            "peers": [{"name": "spark", "url": "https://s", "key": {"from_env": "SPARK_KEY"}}],
            "rooms": [
                {"name": "R", "members": ["a", "spark/b"]},
                {"name": "S", "members": ["a", "c"], "who_answers": "lead:a"},
            ],
        },
        "remote_policy",
        "spec.rooms[0].who_answers",
        "members on other machines",
        id="room-remote-members-keep-everyone",
    ),
    pytest.param(
        {"bots": [{"name": "a"}, {"name": "b"}], "rooms": [{"name": "Ops ", "members": ["a", "b"]}]},
        {"bots": [{"name": "a"}, {"name": "b"}], "rooms": [{"name": "Ops", "members": ["a", "b"]}]},
        "name",
        "spec.rooms[0].name",
        "whitespace",
        id="room-name-padded",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "rooms": [{"name": "R", "members": ["a", "b"], "who_answers": "lead:c"}],
        },
        {
            "bots": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "rooms": [{"name": "R", "members": ["a", "b"], "who_answers": "lead:b"}],
        },
        "reference",
        "spec.rooms[0].who_answers",
        "lead 'c' is not a member",
        id="room-lead-not-member",
    ),
    pytest.param(
        {
            "bots": [{"name": "a"}, {"name": "b"}],
            "rooms": [{"name": "R", "members": ["a", "b"], "picture": "pic.txt"}],
        },
        {
            "bots": [{"name": "a"}, {"name": "b"}],
            "rooms": [{"name": "R", "members": ["a", "b"], "picture": "pic.png"}],
        },
        "file_type",
        "spec.rooms[0].picture",
        "not a PNG, JPEG or WebP",
        id="room-picture-not-image",
    ),
    # sections
    pytest.param(
        {"sections": [{"name": "Team"}], "bots": [{"name": "a", "section": "Taem"}]},
        {"sections": [{"name": "Team"}], "bots": [{"name": "a", "section": "Team"}]},
        "reference",
        "spec.bots[0].section",
        "did you mean 'Team'?",
        id="section-undeclared",
    ),
    # schedules
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "@daily", "prompt": "x"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "0 0 * * *", "prompt": "x"}]}]},
        "schedule",
        "spec.bots[0].routines[0].schedule",
        "does not accept cron macros",
        id="schedule-macro",
    ),
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "0 8 * * MON", "prompt": "x"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "0 8 * * 1", "prompt": "x"}]}]},
        "schedule",
        "spec.bots[0].routines[0].schedule",
        "only numeric cron fields",
        id="schedule-day-name",
    ),
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "61 * * * *", "prompt": "x"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "59 * * * *", "prompt": "x"}]}]},
        "schedule",
        "spec.bots[0].routines[0].schedule",
        "invalid cron expression",
        id="schedule-out-of-range",
    ),
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "daily-ish", "prompt": "x"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "every 1d", "prompt": "x"}]}]},
        "schedule",
        "spec.bots[0].routines[0].schedule",
        "invalid schedule",
        id="schedule-nonsense",
    ),
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "2030-13-01T08:00", "prompt": "x"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "2030-12-01T08:00", "prompt": "x"}]}]},
        "schedule",
        "spec.bots[0].routines[0].schedule",
        "invalid timestamp",
        id="schedule-bad-iso",
    ),
    # peers
    pytest.param(
        {"peers": [{"name": "Spark", "url": "http://spark.lan"}]},
        {"peers": [{"name": "spark", "url": "http://spark.lan"}]},
        "name",
        "spec.peers[0].name",
        "not a valid peer name",
        id="peer-name",
    ),
    pytest.param(
        {"peers": [{"name": "spark", "url": "ftp://spark.lan"}]},
        {"peers": [{"name": "spark", "url": "https://spark.lan/gw"}]},
        "url",
        "spec.peers[0].url",
        "not an http:// or https:// URL",
        id="peer-url-scheme",
    ),
    pytest.param(
        {"peers": [{"name": "spark", "url": "http://"}]},
        {"peers": [{"name": "spark", "url": "http://10.0.0.2:8642"}]},
        "url",
        "spec.peers[0].url",
        "with a host",
        id="peer-url-no-host",
    ),
    pytest.param(
        {"peers": [{"name": "spark", "url": "spark.lan:8642"}]},
        {"peers": [{"name": "spark", "url": "http://spark.lan:8642"}]},
        "url",
        "spec.peers[0].url",
        "write it like http://",
        id="peer-url-no-scheme",
    ),
    # @-tags
    pytest.param(
        {"bots": [{"name": "researchbuddy"}, {"name": "b", "title": "Research Buddy"}]},
        {"bots": [{"name": "researcher"}, {"name": "b", "title": "Research Buddy"}]},
        "mention_collision",
        "spec.bots[1].title",
        "@researchbuddy, which is also the name of bot 'researchbuddy'",
        id="tag-vs-name-collapsed",
    ),
    pytest.param(
        {"bots": [{"name": "research-buddy"}, {"name": "b", "title": "Research Buddy"}]},
        {"bots": [{"name": "research-pal"}, {"name": "b", "title": "Research Buddy"}]},
        "mention_collision",
        "spec.bots[1].title",
        "@research-buddy, which is also the name",
        id="tag-vs-name-slug",
    ),
    pytest.param(
        {"bots": [{"name": "a", "title": "Research Buddy"}, {"name": "b", "title": "research buddy!"}]},
        {"bots": [{"name": "a", "title": "Research Buddy"}, {"name": "b", "title": "Review Buddy"}]},
        "mention_collision",
        "spec.bots[0].title",
        "which is also the title tag of bot 'b'",
        id="tag-vs-tag",
    ),
    pytest.param(
        {"bots": [{"name": "a", "title": "Writer"}, {"name": "b", "display_name": "Writer"}]},
        {"bots": [{"name": "a", "title": "Writer"}, {"name": "b", "display_name": "Editor"}]},
        "mention_collision",
        "spec.bots[0].title",
        "title 'Writer' gives the tag @writer, which is also the display_name tag of bot 'b'",
        id="title-vs-display-name",
    ),
    pytest.param(
        {"bots": [{"name": "a", "title": "Writer"}, {"name": "b", "display_name": "Writer"}]},
        {"bots": [{"name": "a", "title": "Writer"}, {"name": "b", "display_name": "Editor"}]},
        "mention_collision",
        "spec.bots[1].display_name",
        "display_name 'Writer' gives the tag @writer, which is also the title tag of bot 'a'",
        id="display-name-vs-title",
    ),
    pytest.param(
        {"bots": [{"name": "a", "display_name": "Ops Lead"}, {"name": "opslead"}]},
        {"bots": [{"name": "a", "display_name": "Ops Lead"}, {"name": "ops"}]},
        "mention_collision",
        "spec.bots[0].display_name",
        "@opslead, which is also the name of bot 'opslead'",
        id="display-name-vs-name",
    ),
    # secrets
    *[
        pytest.param(
            {"bots": [{"name": "a", "env": {key: "literal-value"}}]},
            {"bots": [{"name": "a", "env": {key: {"from_env": key}}}]},
            "secret_literal",
            f"spec.bots[0].env.{key}",
            "looks like a secret but has a literal value",
            id=f"secret-env-{key}",
        )
        for key in (
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "CLIENT_SECRET",
            "API_SERVER_KEY",
            "DB_PASSWORD",
            "SECRET_SAUCE",
            "api_key",
        )
    ],
    pytest.param(
        {"bots": [{"name": "a", "env": {"SLACK_BOT_TOKEN": 12345}}]},
        {"bots": [{"name": "a", "env": {"SLACK_BOT_TOKEN": {"from_file": "token.txt"}}}]},
        "secret_literal",
        "spec.bots[0].env.SLACK_BOT_TOKEN",
        "literal value",
        id="secret-env-number",
    ),
    pytest.param(
        {"defaults": {"env": {"OPENROUTER_API_KEY": "sk-or-1"}}, "bots": [{"name": "a"}]},
        {"defaults": {"env": {"OPENROUTER_API_KEY": {"from_env": "OR"}}}, "bots": [{"name": "a"}]},
        "secret_literal",
        "spec.defaults.env.OPENROUTER_API_KEY",
        "literal value",
        id="secret-defaults-env",
    ),
    pytest.param(
        {"bots": [{"name": "a", "mcp_servers": {"gh": {"command": "gh", "env": {"GITHUB_TOKEN": "ghp_1"}}}}]},
        {
            "bots": [
                {
                    "name": "a",
                    "mcp_servers": {"gh": {"command": "gh", "env": {"GITHUB_TOKEN": {"from_env": "GH"}}}},
                }
            ]
        },
        "secret_literal",
        "spec.bots[0].mcp_servers.gh.env.GITHUB_TOKEN",
        "literal value",
        id="secret-mcp-env",
    ),
    pytest.param(
        {"bots": [{"name": "a", "mcp_servers": {"x": {"url": "https://x", "headers": {"X-Api-Key": "k"}}}}]},
        {
            "bots": [
                {
                    "name": "a",
                    "mcp_servers": {"x": {"url": "https://x", "headers": {"X-Api-Key": {"from_env": "K"}}}},
                }
            ]
        },
        "secret_literal",
        "spec.bots[0].mcp_servers.x.headers.X-Api-Key",
        "literal value",
        id="secret-mcp-header",
    ),
    pytest.param(
        {"bots": [{"name": "a", "config": {"providers": {"custom": {"api_key": "sk-1"}}}}]},
        {"bots": [{"name": "a", "config": {"providers": {"custom": {"api_key": "${CUSTOM_KEY}"}}}}]},
        "secret_literal",
        "spec.bots[0].config.providers",
        "'providers.custom.api_key' looks like a secret",
        id="secret-config-passthrough",
    ),
    pytest.param(
        {"config": {"platforms.telegram.token": "123:abc"}},
        {"config": {"platforms.telegram.token": "${TELEGRAM_BOT_TOKEN}"}},
        "secret_literal",
        "spec.config.platforms.telegram.token",
        "looks like a secret",
        id="secret-install-config",
    ),
    # files
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "../outside.md"}]},
        {"bots": [{"name": "a", "soul_file": "in.md"}]},
        "file_outside",
        "spec.bots[0].soul_file",
        "points outside the manifest's folder",
        id="soul-dotdot",
    ),
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "/etc/hostname"}]},
        {"bots": [{"name": "a", "soul_file": "souls/a.md"}]},
        "file_outside",
        "spec.bots[0].soul_file",
        "points outside",
        id="soul-absolute",
    ),
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "link.md"}]},
        {"bots": [{"name": "a", "soul_file": "in.md"}]},
        "file_outside",
        "spec.bots[0].soul_file",
        "points outside",
        id="soul-symlink-out",
    ),
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "missing.md"}]},
        {"bots": [{"name": "a", "soul_file": "in.md"}]},
        "file_missing",
        "spec.bots[0].soul_file",
        "does not exist",
        id="soul-missing",
    ),
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "latin1.md"}]},
        {"bots": [{"name": "a", "soul_file": "in.md"}]},
        "file_encoding",
        "spec.bots[0].soul_file",
        "not UTF-8",
        id="soul-not-utf8",
    ),
    pytest.param(
        {"bots": [{"name": "a", "soul_file": "souls"}]},
        {"bots": [{"name": "a", "soul_file": "souls/a.md"}]},
        "file_missing",
        "spec.bots[0].soul_file",
        "is a folder, not a regular file",
        id="soul-is-a-folder",
    ),
    pytest.param(
        {"bots": [{"name": "a", "avatar": {"image": "in.md"}}]},
        {"bots": [{"name": "a", "avatar": {"image": "pic.png"}}]},
        "file_type",
        "spec.bots[0].avatar.image",
        "not a PNG",
        id="avatar-not-image",
    ),
    # passthrough config covered by typed fields
    *[
        pytest.param(
            {"bots": [{"name": "a", "config": config}]},
            {"bots": [{"name": "a", "config": {"agent.max_turns": 9}}]},
            "config_covered",
            f"spec.bots[0].config.{next(iter(config))}",
            f"typed field '{field}'",
            id=f"covered-bot-{next(iter(config))}",
        )
        for config, field in (
            ({"model.default": "m"}, "model"),
            ({"model": {"provider": "p"}}, "model"),
            ({"toolsets": ["web"]}, "toolsets"),
            ({"skills.disabled": ["x"]}, "skills"),
            ({"mcp_servers": {"gh": {"command": "gh"}}}, "mcp_servers"),
            ({"tts.provider": "edge"}, "tts"),
            ({"checkpoints.enabled": True}, "checkpoints"),
            ({"bot_peers.spark.url": "http://s"}, "peers"),
        )
    ],
    *[
        pytest.param(
            {"config": config},
            {"config": {"gateway.other_setting": 1, "agent.max_turns": 3}},
            "config_covered",
            f"spec.config.{next(iter(config))}",
            f"typed field '{field}'",
            id=f"covered-install-{next(iter(config))}",
        )
        for config, field in (
            ({"checkpoints.enabled": True}, "checkpoints"),
            ({"gateway": {"bot_loop_guard": {"max_events": 2}}}, "gateway.bot_loop_guard"),
            ({"agent.bot_mode_protocol": True}, "gateway.bot_mode_protocol"),
            ({"auxiliary.group_router.model": "m"}, "gateway.group_router"),
            ({"bot_peers": {"spark": {"url": "http://s"}}}, "peers"),
        )
    ],
    pytest.param(
        {"defaults": {"config": {"toolsets": ["web"]}}},
        {"defaults": {"config": {"display.skin": "mono"}}},
        "config_covered",
        "spec.defaults.config.toolsets",
        "typed field 'toolsets'",
        id="covered-defaults",
    ),
    pytest.param(
        {"config": {"a..b": 1}},
        {"config": {"a.b": 1}},
        "config_key",
        "spec.config.a..b",
        "empty segment",
        id="config-empty-segment",
    ),
    pytest.param(
        {"config": {"timezone": "UTC"}, "bots": [{"name": "default", "config": {"timezone": "CET"}}]},
        {"config": {"timezone": "UTC"}, "bots": [{"name": "default", "config": {"display.skin": "mono"}}]},
        "config_conflict",
        "spec.config",
        "set both install-wide and by the default bot",
        id="config-root-twice",
    ),
    # validate predicts apply: what the .env writer would refuse is refused here, before any write
    pytest.param(
        {"bots": [{"name": "a", "env": {"MOTD": "two\nlines"}}]},
        {"bots": [{"name": "a", "env": {"MOTD": "one line"}}]},
        "invalid_value",
        "spec.bots[0].env.MOTD",
        "line break",
        id="env-line-break",
    ),
    pytest.param(
        {"bots": [{"name": "a", "env": {"MOTD": "nul\u0000byte"}}]},
        {"bots": [{"name": "a", "env": {"MOTD": "nul byte"}}]},
        "invalid_value",
        "spec.bots[0].env.MOTD",
        "NUL byte",
        id="env-nul",
    ),
    pytest.param(
        {"defaults": {"env": {"GREETING": "hi ${USER}"}}, "bots": [{"name": "a"}]},
        {"defaults": {"env": {"GREETING": "hi $USER"}}, "bots": [{"name": "a"}]},
        "invalid_value",
        "spec.defaults.env.GREETING",
        "would expand",
        id="env-interpolation",
    ),
    pytest.param(
        {"bots": [{"name": "a", "env": {"BIG": "x" * 65537}}]},
        {"bots": [{"name": "a", "env": {"BIG": "x" * 65536}}]},
        "invalid_value",
        "spec.bots[0].env.BIG",
        "over the 65,536-byte limit",
        id="env-too-long",
    ),
    pytest.param(
        {"bots": [{"name": "a", "display_name": " Ann "}]},
        {"bots": [{"name": "a", "display_name": "Ann"}]},
        "invalid_value",
        "spec.bots[0].display_name",
        "spaces around it",
        id="display-name-spaces",
    ),
    pytest.param(
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "every 1h", "prompt": "p", "workdir": "srv"}]}]},
        {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "every 1h", "prompt": "p", "workdir": "/srv"}]}]},
        "invalid_value",
        "spec.bots[0].routines[0].workdir",
        "not an absolute path",
        id="workdir-relative",
    ),
    pytest.param(
        {"bots": [{"name": "a", "env": {"TOKEN": {"from_file": "../outside.md"}}}]},
        {"bots": [{"name": "a", "env": {"TOKEN": {"from_file": "/run/secrets/token"}}}]},
        "file_outside",
        "spec.bots[0].env.TOKEN.from_file",
        "leads out of the manifest's folder",
        id="from-file-outside",
    ),
    pytest.param(
        {"bots": [{"name": "a", "env": {"TOKEN": {"from_file": "link.md"}}}]},
        {"bots": [{"name": "a", "env": {"TOKEN": {"from_file": "token.txt"}}}]},
        "file_outside",
        "spec.bots[0].env.TOKEN.from_file",
        "leads out of the manifest's folder",
        id="from-file-symlink-out",
    ),
    pytest.param(
        {"peers": [{"name": "spark", "url": "http://admin:hunter2@spark.lan:8642"}]},
        {"peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "SPARK_KEY"}}]},
        "secret_literal",
        "spec.peers[0].url",
        "the URL carries a credential",
        id="peer-url-credential",
    ),
    pytest.param(
        {"bots": [{"name": "a", "mcp_servers": {"docs": {"url": "https://mcp.example/sse?api_key=abc"}}}]},
        {"bots": [{"name": "a", "mcp_servers": {"docs": {"url": "https://mcp.example/sse?transport=sse"}}}]},
        "secret_literal",
        "spec.bots[0].mcp_servers.docs.url",
        "query parameter 'api_key'",
        id="mcp-url-credential",
    ),
]

FILES = {
    "in.md": b"You are helpful.\n",
    "souls/a.md": b"You are A.\n",
    "latin1.md": "caf\xe9\n".encode("latin-1"),
    "pic.png": PNG,
    "pic.txt": b"not an image",
    "token.txt": b"t\n",
}


@pytest.mark.parametrize(("bad", "good", "code", "path", "fragment"), RULES)
def test_rule(tmp_path: Path, bad, good, code, path, fragment) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret persona\n")
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    os.symlink(outside, manifests / "link.md")

    result = check(manifests, fleet(**bad), files=FILES)
    assert (code, path) in codes(result), rendered(result)
    hit = next(d for d in result.errors if (d.code, d.path) == (code, path))
    assert fragment in hit.render(), hit.render()
    assert hit.line > 0 and hit.column > 0
    assert result.state is None

    clean = check(tmp_path / "good", fleet(**good), files=FILES)
    assert clean.errors == [], rendered(clean)
    assert clean.state is not None


# --- rules across files and documents ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "spec", "what"),
    [
        pytest.param("Bot", {}, "bot", id="bot"),
        pytest.param("Section", None, "section", id="section"),
        pytest.param("Peer", {"url": "http://p"}, "peer", id="peer"),
    ],
)
def test_duplicate_names_across_files_name_the_first_declaration(tmp_path: Path, kind, spec, what) -> None:
    first = write_docs(tmp_path, "a.yaml", doc(kind, "twin", spec))
    write_docs(tmp_path, "b.yaml", doc(kind, "twin", spec))
    loaded, _ = loading.load_files(loading.discover([str(tmp_path)]))
    result = validating.validate(loaded, now=NOW)
    (diag,) = result.errors
    assert diag.code == "duplicate"
    assert diag.file == str(tmp_path / "b.yaml")
    assert f"{what} 'twin' is declared twice (first at {first}:" in diag.message


def test_a_bot_in_the_fleet_file_and_a_bot_document_may_not_share_a_name(tmp_path: Path) -> None:
    write_docs(tmp_path, "fleet.yaml", fleet(bots=[{"name": "a"}]))
    write_docs(tmp_path, "more.yaml", doc("Bot", "a", {}))
    loaded, _ = loading.load_files(loading.discover([str(tmp_path)]))
    result = validating.validate(loaded, now=NOW)
    (diag,) = result.errors
    assert (diag.code, diag.path, diag.file) == ("duplicate", "metadata.name", str(tmp_path / "more.yaml"))
    assert f"first at {tmp_path / 'fleet.yaml'}:" in diag.message


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        pytest.param("Bot", {}, id="bot"),
        pytest.param("Peer", {"url": "http://p"}, id="peer"),
        pytest.param("Room", {"members": ["Bad Name", "x"]}, id="room-duplicate"),
    ],
)
def test_problems_with_a_document_name_point_at_metadata_name(tmp_path: Path, kind, spec) -> None:
    name = "Bad Name" if kind != "Room" else "R"
    documents = (
        [doc(kind, name, spec)]
        if kind != "Room"
        else [doc("Room", "R", {"members": ["a", "b"]}), doc("Room", "R", {"members": ["a", "b"]})]
    )
    extra = [doc("Bot", "a", {}), doc("Bot", "b", {})] if kind == "Room" else []
    path = write_docs(tmp_path, "objects.yaml", *documents, *extra)
    loaded, _ = loading.load_files([str(path)])
    result = validating.validate(loaded, now=NOW)
    named = [d for d in result.errors if d.path == "metadata.name"]
    assert named, rendered(result)
    assert all(d.line > 0 for d in named)
    lines = path.read_text().splitlines()
    assert all('"name"' in lines[d.line - 1] for d in named)


def test_the_same_fleet_declared_twice_is_an_error(tmp_path: Path) -> None:
    write_docs(tmp_path, "a.yaml", fleet())
    write_docs(tmp_path, "b.yaml", fleet())
    loaded, _ = loading.load_files(loading.discover([str(tmp_path)]))
    result = validating.validate(loaded, now=NOW)
    assert ("duplicate", "metadata.name") in codes(result)
    assert "fleet 'acme' is declared twice" in rendered(result)


def test_two_policies_are_an_error(tmp_path: Path) -> None:
    result = check(tmp_path, doc("Policy", "p1", {}), doc("Policy", "p2", {"config": {"a": 1}}))
    assert ("duplicate", "spec") in codes(result)


def test_a_routine_document_must_name_a_declared_bot(tmp_path: Path) -> None:
    bad = check(
        tmp_path,
        doc("Bot", "writer", {}),
        doc("Routine", "r", {"bot": "writter", "schedule": "every 1h", "prompt": "x"}),
    )
    assert ("reference", "spec.bot") in codes(bad)
    assert "did you mean 'writer'?" in rendered(bad)
    good = check(
        tmp_path / "g",
        doc("Bot", "writer", {}),
        doc("Routine", "r", {"bot": "writer", "schedule": "every 1h", "prompt": "x"}),
    )
    assert good.errors == []
    assert [r.name for r in good.state.bots["writer"].routines] == ["r"]


def test_room_and_section_references_resolve_across_documents(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        doc("Section", "Team"),
        doc("Bot", "a", {"section": "Team"}),
        doc("Bot", "b", {}),
        doc("Room", "Pair", {"members": ["a", "b"], "who_answers": "lead:a"}),
    )
    assert result.errors == [], rendered(result)
    assert result.state.bots["a"].section[1] == "Team"


def test_default_profile_may_be_declared_to_set_its_metadata(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        fleet(
            bots=[
                {
                    "name": "default",
                    "title": "Hermes Main",
                    "description": "the root",
                    "avatar": {"shape": "circle", "color": "teal"},
                }
            ]
        ),
    )
    assert result.errors == [], rendered(result)
    assert result.state.bots["default"].title == "Hermes Main"


def test_reserved_mention_words_give_no_tag_so_they_never_collide(tmp_path: Path) -> None:
    result = check(tmp_path, fleet(bots=[{"name": "a", "title": "Everyone"}, {"name": "b", "title": "everyone"}]))
    assert result.errors == [], rendered(result)


def test_a_bot_whose_title_gives_its_own_name_is_fine(tmp_path: Path) -> None:
    result = check(tmp_path, fleet(bots=[{"name": "researcher", "title": "Researcher"}]))
    assert result.errors == []


def test_non_secret_keys_may_hold_literals(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        fleet(
            bots=[
                {
                    "name": "a",
                    "env": {"LOG_LEVEL": "debug", "KEYBOARD_LAYOUT": "de", "TOKENIZERS_PARALLELISM": False},
                    "config": {"model_max_tokens": 5, "agent.max_tokens": 4000},
                }
            ]
        ),
    )
    assert result.errors == [], rendered(result)


def test_an_empty_secret_placeholder_in_config_is_allowed(tmp_path: Path) -> None:
    result = check(tmp_path, fleet(config={"providers.x.api_key": ""}))
    assert result.errors == []


# --- warnings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "code"),
    [
        pytest.param("every 1m", "frequent_schedule", id="every-minute"),
        pytest.param("* * * * *", "frequent_schedule", id="cron-every-minute"),
        pytest.param("*/2 * * * *", "frequent_schedule", id="cron-every-two"),
        pytest.param("0,3 * * * *", "frequent_schedule", id="cron-close-pair"),
        pytest.param("2020-01-01T00:00", "past_one_shot", id="past-one-shot"),
    ],
)
def test_risky_schedules_are_warnings_not_errors(tmp_path: Path, schedule: str, code: str) -> None:
    result = check(
        tmp_path,
        fleet(bots=[{"name": "a", "routines": [{"name": "r", "schedule": schedule, "prompt": "x"}]}]),
    )
    assert result.errors == []
    assert (code, "spec.bots[0].routines[0].schedule") in codes(result, "warning")
    assert result.state is not None  # a warning does not block


@pytest.mark.parametrize("schedule", ["every 5m", "*/5 * * * *", "0 8 * * 1-5", "2h", "2031-01-01T08:00", "every 1d"])
def test_ordinary_schedules_give_no_warning(tmp_path: Path, schedule: str) -> None:
    result = check(
        tmp_path,
        fleet(bots=[{"name": "a", "routines": [{"name": "r", "schedule": schedule, "prompt": "x"}]}]),
    )
    assert result.diagnostics == [], rendered(result)


def test_the_frequency_warning_lists_the_next_runs(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        fleet(bots=[{"name": "a", "routines": [{"name": "r", "schedule": "*/2 * * * *", "prompt": "x"}]}]),
    )
    (warning,) = result.warnings
    assert "(next: 2030-06-01 12:02, 2030-06-01 12:04, 2030-06-01 12:06 UTC)" in warning.message


# --- schema-level checks (models) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("bot", "path", "fragment"),
    [
        pytest.param(
            {"name": "a", "soul": "x", "soul_file": "in.md"},
            "spec.bots[0]",
            "either 'soul' or 'soul_file'",
            id="soul-and-file",
        ),
        pytest.param(
            {"name": "a", "env": {"K": {"from_env": "A", "from_file": "b"}}},
            "spec.bots[0].env.K",
            "exactly one of from_env, from_file or from_command",
            id="secret-ref-both",
        ),
        pytest.param(
            {"name": "a", "env": {"K": {"from_command": []}}},
            "spec.bots[0].env.K.from_command",
            "at least 1 item",
            id="secret-command-empty",
        ),
        pytest.param(
            {"name": "a", "env": {"K": {"from_file": "k.txt", "timeout": 3}}},
            "spec.bots[0].env.K",
            "'timeout' applies only to from_command",
            id="secret-timeout-without-command",
        ),
        pytest.param(
            {"name": "a", "env": {"K": {"from_command": ["pass", "show", "k"], "timeout": 0}}},
            "spec.bots[0].env.K.timeout",
            "greater than 0",
            id="secret-command-timeout-zero",
        ),
        pytest.param(
            {"name": "a", "env": {"bad key": "x"}},
            "spec.bots[0].env.bad key",
            "'^[A-Za-z_][A-Za-z0-9_]*$'",
            id="env-key-shape",
        ),
        pytest.param(
            {"name": "a", "avatar": {"seed": "s", "shape": "circle"}},
            "spec.bots[0].avatar",
            "takes only",
            id="avatar-mixed",
        ),
        pytest.param(
            {"name": "a", "avatar": {"kind": "geometric"}},
            "spec.bots[0].avatar",
            "needs 'shape'",
            id="avatar-no-shape",
        ),
        pytest.param({"name": "a", "model": {}}, "spec.bots[0].model", "needs at least", id="empty-model"),
        pytest.param(
            {"name": "a", "mcp_servers": {"x": {"command": "c", "url": "https://u"}}},
            "spec.bots[0].mcp_servers.x",
            "exactly one of 'command'",
            id="mcp-both",
        ),
        pytest.param(
            {"name": "a", "routines": [{"name": "r", "schedule": "every 1h"}]},
            "spec.bots[0].routines[0]",
            "needs a 'prompt'",
            id="routine-no-work",
        ),
        pytest.param({"name": "a", "title": "x" * 65}, "spec.bots[0].title", "at most 64", id="title-too-long"),
        pytest.param({"name": "a", "tts": {"provider": "nope"}}, "spec.bots[0].tts.provider", "edge", id="tts-provider"),
    ],
)
def test_model_level_rules_are_reported_at_the_field(tmp_path: Path, bot, path, fragment) -> None:
    result = check(tmp_path, fleet(bots=[bot]))
    paths = {d.path: d for d in result.errors}
    assert path in paths, rendered(result)
    assert fragment in paths[path].message
    assert result.state is None


def test_who_answers_grammar(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        fleet(
            bots=[{"name": "a"}, {"name": "b"}],
            rooms=[{"name": "R", "members": ["a", "b"], "who_answers": "the-lead"}],
        ),
    )
    assert "spec.rooms[0].who_answers" in {d.path for d in result.errors}
