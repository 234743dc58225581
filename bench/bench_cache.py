"""The observation cache: a no-op plan next to `hermes profile list`, and a no-op watch pass.

Run by hand (not part of the test run):

    python bench/bench_cache.py              # 1,000 bots x 3 routines (plain, rich); a watch pass over 10,000
    python bench/bench_cache.py --quick      # 200 bots; the watch pass over 1,000
    python bench/bench_cache.py --profile    # cProfile of a cached no-op plan of 1,000 plain bots, then exit

Two bot shapes, each with three routines (a cron, an interval, a paused one):

- plain: title, section, model, soul, checkpoints;
- rich: bench_scale's bots (title, description, section, model, toolsets, a literal and a
  from_env .env value, a soul, a passthrough key).

Each home is built by `apply`; a second, no-op `apply` a moment later leaves the cache settled
(the files the first one wrote in the tick of its cache write are racy until a later write). Then
five alternating pairs, each its own process: `hermes-fleet plan --detailed-exitcode` and `hermes
profile list` on the same home; the medians and the median of the pairs' ratios are printed, and
the same for `plan --no-cache`. The watch pass: a `watch` reconciler in this process over a
10,000-bot plain home (built once, into a temp folder), its file watcher on; the median of five
no-op passes after two warm ones (seconds of one pass, in-process).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import ROUTINES, run_cli, scale_yaml
from common import SECRET_ENV, SECTIONS, bot_name, hermes_bin, hermes_env, quiet_cli, scratch

GOAL_RATIO = 0.25  # no-op plan / `hermes profile list`, whole process, at most
GOAL_WATCH_S = 1.0  # one no-op watch pass over 10,000 bots, at most
PAIRS = 5


def plain_yaml(n: int) -> str:
    lines = ["apiVersion: hermes-fleet/v1", "kind: Fleet", "metadata: {name: bench}", "spec:", "  sections:"]
    lines += [f"    - {{name: {s}}}" for s in SECTIONS]
    lines.append("  bots:")
    for i in range(n):
        lines += [
            f"    - name: {bot_name(i)}",
            f"      title: Bot {i}",
            f"      section: {SECTIONS[i % len(SECTIONS)]}",
            "      model: {provider: openrouter, default: anthropic/claude-sonnet-4}",
            "      soul: |",
            f"        You are bot {i}. Be calm and concise.",
            "      checkpoints: {enabled: true, max_snapshots: 20}",
            "      routines:",
            *(r.format(m=i % 60) for r in ROUTINES),
        ]
    return "\n".join(lines) + "\n"


SHAPES = {"plain": plain_yaml, "rich": scale_yaml}


def build(work: Path, shape: str, n: int) -> tuple[Path, Path]:
    fleet, home = work / f"{shape}-{n}.yaml", work / f"home-{shape}-{n}"
    fleet.write_text(SHAPES[shape](n), encoding="utf-8")
    run_cli(["apply", "-f", str(fleet), "--home", str(home)])
    time.sleep(0.1)
    run_cli(["apply", "-f", str(fleet), "--home", str(home)])  # settles the cache (see the docstring)
    return fleet, home


def list_once(binary: Path, home: Path, work: Path) -> float:
    userhome = work / "list-user"
    userhome.mkdir(exist_ok=True)
    start = time.perf_counter()
    subprocess.run([str(binary), "profile", "list"], env=hermes_env(home, userhome), check=True, capture_output=True)
    return time.perf_counter() - start


def pairs(binary: Path, fleet: Path, home: Path, work: Path, *flags: str) -> tuple[float, float, float]:
    """(median plan s, median list s, median of the pairs' plan/list) over PAIRS alternating pairs."""
    argv = ["plan", "--detailed-exitcode", "-f", str(fleet), "--home", str(home), *flags]
    plans, lists = [], []
    for _ in range(PAIRS):
        plans.append(run_cli(argv)[0])
        lists.append(list_once(binary, home, work))
    ratio = statistics.median(p / q for p, q in zip(plans, lists, strict=True))
    return statistics.median(plans), statistics.median(lists), ratio


def settle_cost(fleet: Path, home: Path) -> tuple[float, float]:
    """(seconds apply spends keeping the settled plan, in this process; the memo's size in MB)."""
    from controller.adapters import settled
    from controller.cli import build_parser
    from controller.verbs import plan as plan_verb

    args = build_parser().parse_args(["apply", "-f", str(fleet), "--home", str(home)])
    start = time.perf_counter()
    plan_verb.settle(args, home)
    took = time.perf_counter() - start
    return took, settled.path_of(home).stat().st_size / 1e6


def after_edit(fleet: Path, home: Path) -> float:
    """Seconds of a whole-process plan after a hand edit of one bot (the settled plan no longer
    holds: planned in full, with the observation cache); the edit is undone by an apply."""
    config = next(p for p in sorted((home / "profiles").iterdir()) if p.is_dir()) / "config.yaml"
    config.write_text(config.read_text() + "# a hand edit\n", encoding="utf-8")
    took = run_cli(["plan", "-f", str(fleet), "--home", str(home)])[0]
    run_cli(["apply", "-f", str(fleet), "--home", str(home)])
    return took


def watch_pass(work: Path, n: int) -> tuple[float, float, int]:
    """(median seconds of a no-op watch pass, seconds of the safety net's full pass, bots)."""
    from controller.adapters.sources import LocalSource
    from controller.engine.watching import Log, Options, Reconciler

    folder = work / f"watch-{n}"
    folder.mkdir()
    (folder / "fleet.yaml").write_text(plain_yaml(n), encoding="utf-8")
    home = work / f"home-watch-{n}"
    quiet_cli(["apply", "-f", str(folder / "fleet.yaml"), "--home", str(home)])
    reconciler = Reconciler(
        home, LocalSource([str(folder)], recursive=False), Options(interval=60, full_every=10), Log("text", io.StringIO())
    )
    reconciler.observations.start(reconciler.stop)
    try:
        deadline = time.monotonic() + 60
        while not reconciler.observations._ready and time.monotonic() < deadline:
            time.sleep(0.05)
        times = []
        full = float("nan")
        for i in range(10):
            start = time.perf_counter()
            run = reconciler.reconcile("interval")
            took = time.perf_counter() - start
            if run.result != "in-sync":
                raise RuntimeError(f"watch pass {i}: {run.result} {run.message}")
            if not reconciler.pass_cache.use:
                full = took
            elif i >= 2:
                times.append(took)
    finally:
        reconciler.stop.set()
    return statistics.median(times), full, n


def profile_plan(work: Path) -> None:
    fleet, home = build(work, "plain", 1000)
    prof = cProfile.Profile()
    os.environ.setdefault(SECRET_ENV, "sk-bench-not-a-real-key")
    with contextlib.redirect_stdout(io.StringIO()):
        prof.runcall(quiet_cli, ["plan", "-f", str(fleet), "--home", str(home)])
    buffer = io.StringIO()
    pstats.Stats(prof, stream=buffer).strip_dirs().sort_stats("cumulative").print_stats(40)
    print(buffer.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200 bots; the watch pass over 1,000")
    parser.add_argument("--profile", action="store_true", help="cProfile a cached no-op plan of 1,000 plain bots")
    parser.add_argument("--watch-bots", type=int, default=0, help="bots of the watch pass (default 10,000; --quick 1,000)")
    args = parser.parse_args()
    os.environ.setdefault(SECRET_ENV, "sk-bench-not-a-real-key")
    binary = hermes_bin()
    bots = 200 if args.quick else 1000
    watch_bots = args.watch_bots or (1000 if args.quick else 10000)
    with scratch("hf-bench-cache-") as work:
        if args.profile:
            profile_plan(work)
            return 0
        print(
            f"no-op plan vs `hermes profile list`, {bots} bots x 3 routines, whole process, median of {PAIRS} alternating pairs"
        )
        print("  plan: answered from the settled plan; after edit: one bot's config.yaml edited, planned in full")
        print("  (observation cache); no-cache: every file read; settle: what apply spends keeping the plan")
        header = f"{'shape':>6} {'plan s':>8} {'list s':>8} {'ratio':>7} {'no-cache s':>11} {'ratio':>7}"
        print(f"{header} {'after edit s':>13} {'settle s':>9} {'memo MB':>8} {'goal':>6} ok")
        ok = True
        for shape in SHAPES:
            fleet, home = build(work, shape, bots)
            if binary is None:
                print(f"{shape:>6} (no Hermes CLI: set HERMES_FLEET_HERMES_BIN or run .ci/install-hermes)")
                continue
            plan_s, list_s, ratio = pairs(binary, fleet, home, work)
            full_s, _, full_ratio = pairs(binary, fleet, home, work, "--no-cache")
            settle_s, memo_mb = settle_cost(fleet, home)
            edited_s = after_edit(fleet, home)
            good = ratio <= GOAL_RATIO
            ok = ok and good
            row = f"{shape:>6} {plan_s:8.2f} {list_s:8.2f} {ratio:7.2f} {full_s:11.2f} {full_ratio:7.2f}"
            print(f"{row} {edited_s:13.2f} {settle_s:9.2f} {memo_mb:8.1f} {GOAL_RATIO:6.2f} {'yes' if good else 'NO'}")
        seconds, full, n = watch_pass(work, watch_bots)
        good = seconds <= GOAL_WATCH_S
        ok = ok and good
        print(f"no-op watch pass, {n} plain bots x 3 routines, in-process, file events on: median {seconds:.2f} s")
        verdict = "yes" if good else "NO"
        print(f"  (the safety net's full pass, every --full-every passes: {full:.2f} s); goal <= {GOAL_WATCH_S:.1f} s: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
