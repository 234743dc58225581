"""`apply`'s progress line on a terminal: `applying 412/1000 bot/bot00411`, rewritten in place.

Shown only on a terminal (stderr is a TTY), never with `-o json`, and only once the run has
taken `delay` seconds (a small apply prints nothing extra); redrawn at most every `interval`
seconds; erased when the apply ends, so the report that follows starts on a clean line.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

DELAY = 2.0  # seconds before the first line
INTERVAL = 0.1  # seconds between two redraws


class ProgressLine:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        delay: float = DELAY,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled if enabled is not None else _is_terminal(self.stream)
        self.clock = clock
        self.start = clock()
        self.delay = delay
        self.interval = interval
        self.last = -1.0
        self.shown = False

    def __call__(self, done: int, total: int, current: str) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or (self.shown and now - self.last < self.interval):
            return
        self.last = now
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        line = f"applying {done}/{total} {current}".rstrip()[:width]
        self.stream.write("\r" + line + "\033[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the line (when one was drawn)."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
