"""Hermes' naming rules, offline: profile names, Bot Mode @-mention forms, peer env keys.

Facts: docs/hermes/home.md#names (profile names), docs/hermes/bot-mode.md#mentions (mention forms,
`mentionNameForms` / `alias_forms`), docs/hermes/files.md#env-keys (peer key names). Pure functions; used by
validation and by the convergers.
"""

from __future__ import annotations

import re

PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\Z")  # \Z: "$" would accept a trailing newline
# `hermes profile create` refuses these; `default` is the root profile and may only be described.
RESERVED_PROFILE_NAMES = frozenset({"hermes", "default", "test", "tmp", "root", "sudo"})
# Mention forms never used as a bot tag (docs/hermes/bot-mode.md#mentions).
RESERVED_MENTIONS = frozenset({"all", "everyone", "user", "default", "hermes"})
_SLUG_RUN = re.compile(r"[^a-z0-9_-]+")
_COLLAPSE = re.compile(r"[^a-z0-9_-]")
_MENTION = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")

# Keys whose values are secrets: a literal value for one of these in a manifest is an error.
_SECRET_LAST = frozenset({"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PAT", "CREDENTIALS", "AUTHORIZATION", "APIKEY"})
_SECRET_ANY = frozenset({"SECRET", "PASSWORD", "PASSWD"})
_SEGMENTS = re.compile(r"[._\-]+")


def profile_name_problem(name: str) -> str | None:
    """Why `name` is not a valid Hermes profile name, or None; the fix it suggests is itself valid."""
    if PROFILE_NAME.match(name):
        return None
    fixed = suggested_profile_name(name)
    if fixed is not None and fixed == name.strip().lower():
        return f"Hermes lower-cases and strips profile names; write {fixed!r}"
    rule = (
        "a profile name is 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter "
        "or digit (Hermes' rule ^[a-z0-9][a-z0-9_-]{0,63}$)"
    )
    return rule + (f"; write {fixed!r}" if fixed else "")


def suggested_profile_name(name: str) -> str | None:
    """A valid, unreserved profile name close to `name` ('My Bot' -> 'my-bot'), or None."""
    slug = _SLUG_RUN.sub("-", name.strip().lower()).strip("-_")[:64].rstrip("-_")
    if not PROFILE_NAME.match(slug) or slug in RESERVED_PROFILE_NAMES:
        return None
    return slug


def mention_forms(text: str) -> list[str]:
    """The @-tags Bot Mode derives from a title: `Research Buddy` -> research-buddy, researchbuddy."""
    lowered = text.strip().lower()
    forms: list[str] = []
    for form in (_SLUG_RUN.sub("-", lowered).strip("-"), _COLLAPSE.sub("", lowered)):
        if form and _MENTION.match(form) and form not in RESERVED_MENTIONS and form not in forms:
            forms.append(form)
    return forms


def bot_tags(name: str, title: str | None = None, display_name: str | None = None) -> dict[str, str]:
    """Every @-tag the Desktop resolves to this bot, each with the field it comes from (`name`,
    `title`, `display_name`): its profile name, and the mention forms of its title and display name
    (`resolveRosterMentions` with `botFriendlyNames`: docs/hermes/bot-mode.md#mentions)."""
    tags: dict[str, str] = {}
    if name not in RESERVED_MENTIONS:  # `default` is @hermes, which no other bot can take
        tags[name] = "name"
    for field, value in (("title", title), ("display_name", display_name)):
        for form in mention_forms(value or ""):
            tags.setdefault(form, field)
    return tags


def peer_env_key(peer: str) -> str:
    """`my-box` -> `HERMES_PEER_MY_BOX_KEY` (hermes_cli/subcommands/peer.py in main)."""
    return "HERMES_PEER_" + peer.upper().replace("-", "_") + "_KEY"


def is_secret_key(key: str) -> bool:
    """True for keys that hold secrets (`*_KEY`, `*_TOKEN`, `API_SERVER_KEY`, `api_key`, ...)."""
    segments = [s for s in _SEGMENTS.split(key.upper()) if s]
    if not segments:
        return False
    # The last word decides (`GITHUB_TOKEN` yes, `max_tokens` no); a few words mark any key.
    return segments[-1] in _SECRET_LAST or any(s in _SECRET_ANY for s in segments)
