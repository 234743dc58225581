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

__all__ = ["CREDENTIAL_SUFFIXES", "ENV_NAME_DENYLIST", "ENV_NAME_RE", "PROFILE_ENV_HEADER"]
