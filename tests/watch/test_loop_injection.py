"""The loop takes its clock, rng and notifier from the caller (controller/engine/watching.py), so
in-process tests drive it with a fake clock: run times, durations, the next run, metrics and the
pass deadline all come from the clock given, the jitter from the rng given. A real home, real
manifests, a real apply."""

from __future__ import annotations

import io
import json
from pathlib import Path

from controller.adapters.sources import LocalSource
from controller.engine.watching import Clock, Log, Options, Reconciler
from tests.watch.harness import read_status, write_fleet

LOOP = Path(__file__).resolve().parents[2] / "controller" / "engine" / "watching.py"


class FakeClock:
    def __init__(self) -> None:
        self.wall_now = 1_000_000.0
        self.mono_now = 50.0

    def wall(self) -> float:
        return self.wall_now

    def monotonic(self) -> float:
        self.mono_now += 0.25  # every reading moves a quarter of a second
        return self.mono_now


class HighRng:
    def __init__(self) -> None:
        self.asked: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.asked.append((a, b))
        return b


def test_run_times_durations_jitter_and_health_come_from_what_the_loop_is_given(manifests: Path, home: Path, user: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    fake, rng = FakeClock(), HighRng()
    reconciler = Reconciler(
        home,
        LocalSource([str(manifests)], recursive=False),
        Options(interval=100.0, jitter=0.2, pass_deadline=1.0),
        Log("text", io.StringIO()),
        clock=Clock(wall=fake.wall, monotonic=fake.monotonic),
        rng=rng,
    )
    run = reconciler.reconcile("test")
    assert run.result == "applied" and run.at == "1970-01-12T13:46:40+00:00"
    assert run.seconds > 0 and run.seconds % 0.25 == 0  # read from the fake monotonic clock only
    assert reconciler.delay_after(run) == 120.0 and rng.asked == [(-20.0, 20.0)]
    reconciler.next_run_at = fake.wall() + 120.0
    reconciler.write_status()
    status = read_status(home)
    assert status["updated_at"] == "1970-01-12T13:46:40+00:00" and status["next_run_at"] == "1970-01-12T13:48:40+00:00"
    body = reconciler.render_metrics("")[0].decode()
    assert 'hermes_fleet_last_run_timestamp_seconds{fleet="acme",host=' in body and "1e+06" in body
    reconciler.pass_started = fake.monotonic() - 3.0  # a pass 3 s into a 1 s deadline, by the fake clock
    healthy, report = reconciler.healthz()
    assert not healthy and report["overrun_seconds"] == 2.2  # 3 s + the 0.25 s read - 1 s, rounded
    assert json.dumps(report)


def test_the_loop_stays_thin() -> None:
    assert len(LOOP.read_text().splitlines()) < 300  # issue 29: the policy lives in core/watching.py
