"""The retry delay after failed passes stays finite however long the failures last (docs/watch.md)."""

from __future__ import annotations

import io
from pathlib import Path

from controller.adapters.sources import LocalSource
from controller.engine.watching import Log, Options, Reconciler, Run


def test_the_retry_delay_after_thousands_of_failed_passes_is_the_interval(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    options = Options(interval=120, retry_min=2.0)
    reconciler = Reconciler(
        tmp_path / "home", LocalSource([str(tmp_path / "m")], recursive=False), options, Log("text", io.StringIO())
    )
    busy = Run("2026-12-03T00:00:00+00:00", "retry", "busy")
    delays = [reconciler.delay_after(busy) for _ in range(5)]
    assert delays == [2.0, 4.0, 8.0, 16.0, 32.0]
    reconciler.failures = 5000  # a source down for days at a short interval
    assert reconciler.delay_after(busy) == 120
