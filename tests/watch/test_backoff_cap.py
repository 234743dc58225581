"""The retry delay after failed passes stays finite however long the failures last (docs/watch.md).

Before the cap, `retry_min * 2 ** (failures - 1)` raised OverflowError after about 1,000 failed
passes in a row (a git source down for a day at a two-minute interval) and ended the reconciler.
"""

from __future__ import annotations

import random

from controller.codes import WatchResult
from controller.core import watching as policy
from controller.core.watching import LoopState, Options, Run


def test_the_retry_delay_after_thousands_of_failed_passes_is_the_interval() -> None:
    options = Options(interval=120, retry_min=2.0)
    busy = Run(at="2026-12-03T00:00:00+00:00", trigger="retry", result=WatchResult.BUSY)
    state, delays = LoopState(), []
    for _ in range(5):
        state, delay = policy.delay_after(state, busy, options, random.Random(1))
        delays.append(delay)
    assert delays == [2.0, 4.0, 8.0, 16.0, 32.0]
    state, delay = policy.delay_after(LoopState(failures=5000), busy, options, random.Random(1))  # a source down for days
    assert delay == 120
    assert state.failures == 5001
