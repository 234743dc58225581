"""Whether text output is coloured: --color, NO_COLOR, TERM=dumb, a terminal (kept apart from
reporting.py, whose imports a replayed plan does without: verbs/fastplan.py)."""

from __future__ import annotations

import os
from typing import TextIO


def use_color(stream: TextIO, flag: str = "auto") -> bool:
    if flag in ("always", "never"):
        return flag == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()
