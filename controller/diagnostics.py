"""Diagnostics: one finding about the manifests, pinned to a file, line, column and field path.

Produced by loading and validating, rendered by reporting (text, json, github, junit). A
diagnostic message says what is wrong; its hint says what to do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    file: str
    line: int  # 1-based; 0 when unknown
    column: int  # 1-based; 0 when unknown
    path: str  # field path, e.g. spec.bots[2].title; "" for the whole document
    message: str
    hint: str = ""
    code: str = "invalid"  # stable machine-readable reason, documented in docs/cli.md

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


def format_path(loc: tuple[object, ...]) -> str:
    """('spec', 'bots', 2, 'title') -> 'spec.bots[2].title'"""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
