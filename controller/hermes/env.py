"""Hermes' rules for `.env` names, as data (docs/hermes/files.md#env-keys)."""

from __future__ import annotations

import re

# What `hermes profile create` writes into a new profile's .env (hermes_cli/profiles.py).
PROFILE_ENV_HEADER = (
    "# Per-profile secrets for this Hermes profile.\n"
    "# API keys and tokens set here override the shell environment.\n"
    "# Behavioral settings belong in config.yaml, not here.\n"
)

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" would accept a trailing newline

# Names Hermes' env writer refuses (`_ENV_VAR_NAME_DENYLIST`, hermes_cli/config.py): they steer
# the loader, interpreter, shell or Hermes' own location. We refuse them for the same reason.
ENV_NAME_DENYLIST = frozenset(
    {
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "LD_DEBUG",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "DYLD_FRAMEWORK_PATH",
        "DYLD_FALLBACK_LIBRARY_PATH",
        "DYLD_FALLBACK_FRAMEWORK_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PYTHONEXECUTABLE",
        "PYTHONNOUSERSITE",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PATH",
        "SHELL",
        "BROWSER",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_SHELL",
        "HERMES_HOME",
        "HERMES_PROFILE",
        "HERMES_CONFIG",
        "HERMES_ENV",
    }
)

# After loading, Hermes strips non-ASCII characters from variables with these suffixes
# (`_sanitize_loaded_credentials`, hermes_cli/env_loader.py), so such values are refused. Other
# non-ASCII values are written as they are: Hermes' loader reads them intact, although its own
# `save_env_value` would have stripped them on write.
CREDENTIAL_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_KEY")

# python-dotenv expands `${NAME}` / `${NAME:-default}` in every value, quoted or not, and has no
# escape for it: such a value can not be stored so that Hermes reads it back unchanged.
_INTERPOLATION_RE = re.compile(r"\$\{[^}:]*(?::-[^}]*)?\}")

# Hermes' sanitiser splits a line that starts with a known `KEY=` at every other known `KEY=`
# inside it (`_sanitize_env_lines`). Every known key in 0.19 has this shape; a value holding one
# is refused unless whitespace / `://` / `?` / `&` before it marks the value as "structured".
_EMBEDDED_KEY_RE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+=")
_STRUCTURED_MARKERS = ("://", "?", "&")


def quote_value(value: str) -> str:
    """The value as Hermes' `_quote_env_value` writes it (double quotes only when needed)."""
    if value == "":
        return value
    needs_quotes = "#" in value or '"' in value or "'" in value or value != value.strip() or any(ch.isspace() for ch in value)
    if not needs_quotes:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def value_problem(key: str, value: str) -> str | None:
    """Why Hermes could not store `value` under `key` in a .env and read it back intact, or None.

    docs/hermes/files.md#env-format, #env-rewrites: one line per value, no NUL, `${...}`
    expanded by the loader, non-ASCII stripped from credentials, a trailing backslash misread
    inside quotes, an embedded `KEY=` split off by the sanitiser.
    """
    if not ENV_NAME_RE.match(key):
        return f"invalid environment variable name {key!r}"
    if key in ENV_NAME_DENYLIST:
        return f"{key} may not be set in a Hermes .env (Hermes refuses it too)"
    if "\n" in value or "\r" in value:
        return f"the value of {key} contains a line break; a .env value must be one line"
    if "\x00" in value:
        return f"the value of {key} contains a NUL byte"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"the value of {key} is not valid Unicode text"
    if key.endswith(CREDENTIAL_SUFFIXES) and not value.isascii():
        return f"the value of {key} has non-ASCII characters, which Hermes strips from credentials"
    if _INTERPOLATION_RE.search(value):
        return f"the value of {key} contains '${{...}}', which Hermes' .env loader would expand"
    if value.endswith("\\") and quote_value(value) != value:
        # `"...\\"`: python-dotenv's quoted-value pattern takes `\"` as an escaped quote and reads
        # on into the next lines, swallowing them (seen with the real Hermes 0.19 loader).
        return f"the value of {key} needs quotes and ends with a backslash, which Hermes misreads"
    match = _EMBEDDED_KEY_RE.search(value)
    # Quoting only adds `"` and `\\`, so testing the raw value's prefix is the same test Hermes runs.
    if match and not _is_structured(value[: match.start()]):
        return (
            f"the value of {key} contains {match.group(0)!r}, which Hermes' .env sanitiser could split into a separate variable"
        )
    return None


def _is_structured(prefix: str) -> bool:
    return any(marker in prefix for marker in _STRUCTURED_MARKERS) or any(ch.isspace() for ch in prefix)


__all__ = ["CREDENTIAL_SUFFIXES", "ENV_NAME_DENYLIST", "ENV_NAME_RE", "PROFILE_ENV_HEADER", "quote_value", "value_problem"]
