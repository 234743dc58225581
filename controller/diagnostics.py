"""Diagnostics: one finding about the manifests, pinned to a file, line, column and field path.

Produced by loading and validating, rendered by reporting (text, json, github, junit). A
diagnostic message says what is wrong; its hint says what to do. Every output shows at most
MAX_SHOWN of them (the first, in file and line order) and then says how many more there are, so
one file with 100,000 mistakes cannot flood a terminal or a CI log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning"]
# Every diagnostic's stable `code` (docs/cli.md, "Diagnostic codes"); mypy refuses any other word.
DiagnosticCode = Literal[
    # loading a file
    "too_large",
    "binary",
    "encoding",
    "unreadable",
    "yaml",
    # schema
    "envelope",
    "unknown_field",
    "missing_field",
    "invalid_value",
    "no_reader",
    # the whole set
    "fleet",
    "duplicate",
    "name",
    "reserved_name",
    "default_profile",
    "reference",
    "room_members",
    "remote_policy",
    "cross_host",
    "peer_accept",
    "rename_chain",
    "mention_collision",
    "secret_literal",
    "config_covered",
    "config_key",
    "config_conflict",
    "url",
    "schedule",
    "file",
    "file_missing",
    "file_outside",
    "file_too_large",
    "file_encoding",
    "file_type",
    "unknown_provider",
    "unknown_toolset",
    "invalid",
    # warnings
    "frequent_schedule",
    "past_one_shot",
    "who_answers_auto",
    "inert_value",
    "unknown_config_key",
    "base_url_ignored",
    "no_effect",
    "warning",
]
MAX_SHOWN = 1000


@dataclass(frozen=True, kw_only=True)
class Diagnostic:
    severity: Severity
    file: str
    line: int  # 1-based; 0 when unknown
    column: int  # 1-based; 0 when unknown
    path: str  # field path, e.g. spec.bots[2].title; "" for the whole document
    message: str
    hint: str = ""
    code: DiagnosticCode = "invalid"  # stable machine-readable reason, documented in docs/cli.md

    @property
    def where(self) -> str:
        if not self.line:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"

    def render(self) -> str:
        """`file:line:col: error: field.path: what is wrong; what to do`"""
        field = f"{self.path}: " if self.path else ""
        hint = f"; {self.hint}" if self.hint else ""
        return f"{self.where}: {self.severity}: {field}{self.message}{hint}"

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def capped(diagnostics: Sequence[Diagnostic], limit: int = MAX_SHOWN) -> tuple[Sequence[Diagnostic], int]:
    """(the diagnostics to show, how many more there are)."""
    return diagnostics[:limit], max(0, len(diagnostics) - limit)


def omitted_line(omitted: int) -> str:
    return f"... and {omitted:,} more diagnostic(s) not shown; fix the ones above and validate again"


def format_path(loc: tuple[object, ...]) -> str:
    """('spec', 'bots', 2, 'title') -> 'spec.bots[2].title'; a key with a control character (or any
    other unprintable one) is shown as its repr, so it cannot steer a terminal or break an output."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)
            out += ("." if out else "") + (text if text.isprintable() else repr(text))
    return out
