"""SIGTERM and SIGINT for the reconciler's loop (docs/watch.md#signals-and---once)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

from controller.engine.watchlog import Log
from controller.errors import Terminated

if TYPE_CHECKING:
    from controller.engine.watching import Reconciler

STOP_GRACE = 3.0  # seconds a pass has to reach the end of an object after SIGTERM/SIGINT


def install_signals(reconciler: Reconciler, log: Log) -> None:
    """SIGTERM and SIGINT stop the loop; an apply in progress stops between two objects. A pass
    still running STOP_GRACE seconds later (held up before it applies anything: a slow secret
    command, a slow read) is interrupted the way `apply` is (exit 143 or 130), so the reconciler
    always stops within seconds (docs/watch.md#signals-and---once)."""
    received: list[int] = []

    def handle(signum: int, _frame: Any) -> None:
        log.event("stopping", signal=signal.Signals(signum).name)
        reconciler.stop.set()
        reconciler.wake.set()
        if reconciler.pass_started is not None and not received:
            received.append(signum)
            signal.setitimer(signal.ITIMER_REAL, STOP_GRACE)

    def overdue(_signum: int, _frame: Any) -> None:
        if reconciler.pass_started is None:
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup on the way out must not be cut
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()

    signal.signal(signal.SIGALRM, overdue)
    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
