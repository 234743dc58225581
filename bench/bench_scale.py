"""Scale: apply and no-op plan at 100, 1,000 (and 10,000) bots x 3 routines, next to `hermes profile list`.

Run by hand (not part of the test run):

    python bench/bench_scale.py                 # 100 and 1,000 bots, start-up race, ratios
    python bench/bench_scale.py --full          # adds 10,000 bots (about 2 minutes more)
    HERMES_FLEET_BENCH_FULL=1 bench/run         # the same through bench/run
    python bench/bench_scale.py --profile 200   # cProfile of a 200-bot apply and no-op plan, then exit

Every bot sets the converge benchmark's fields (title, description, section, model, toolsets, a
literal and a from_env .env value, a soul, a passthrough key) and has three routines (a cron, an
interval and a paused one). Each `apply` (fresh home) and no-op `plan --detailed-exitcode` runs
as its own `python -m controller` process, so the wall time includes the interpreter start-up,
exactly like the one `hermes profile list` on the same home it is compared with; the process
reads its own peak RSS (VmHWM). The scaling exponent is the least-squares slope of log(time)
over log(bots). The start-up race times `apply` of 10 bots x 2 routines against the shell loop
(`hermes profile create` + `hermes cron create` per routine) in the same run. A sync(2) comes
before each timed apply and before the loop: the loop's Hermes leaves its files unsynced, and an
earlier size's home is removed right before the next apply; the apply's syncfs(2) would otherwise
write all of that out too, and pay for work that is not its own.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import pstats
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, SECRET_ENV, bot_name, fleet_yaml, hermes_bin, hermes_env, quiet_cli, scratch

ROUTINES = (
    "        - {{name: Morning digest, schedule: '{m} 8 * * 1-5', prompt: Summarize the news, deliver: bot-chat}}",
    "        - {{name: Inbox sweep, schedule: every 2h, prompt: Check the inbox}}",
    "        - {{name: Weekly report, schedule: '0 17 * * 5', prompt: Write the report, paused: true}}",
)
GOAL_APPLY_LIST = 4.0  # apply of 1,000 bots / one `hermes profile list`, at most
GOAL_GROWTH = 5.5  # apply of 1,000 bots / apply of 200 bots, at most
GOAL_10K_S = 60.0
GOAL_10K_MB = 400.0
GOAL_PLAN_LIST = 0.5  # no-op plan of 1,000 bots / one `hermes profile list`, at most
GOAL_STARTUP = 50.0  # shell loop / apply, 10 bots x 2 routines, at least
GOAL_RACE_BOTS = 10  # the size the start-up goal is set for


def scale_yaml(n: int, routines: int = 3) -> str:
    """The converge benchmark's fleet with `routines` routines per bot."""
    out = []
    for line in fleet_yaml(n).splitlines():
        out.append(line)
        if line.startswith("        agent: {max_turns:"):
            i = int(line.split(":")[-1].strip(" }")) - 20
            out.append("      routines:")
            out += [r.format(m=i % 60) for r in ROUTINES[:routines]]
    return "\n".join(out) + "\n"


def run_cli(argv: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one `python -m controller <argv>` process."""
    code = (
        "import sys, runpy; sys.argv = ['hermes-fleet', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('controller', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "sys.stderr.write(f'\\nHWM {hwm[0] if hwm else 0} {code}\\n')\n"
    )
    # As installed by pip (bytecode compiled), not as a test environment may run it: without this,
    # PYTHONDONTWRITEBYTECODE=1 makes every run compile controller/ again (about 0.1 s).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env[SECRET_ENV] = "sk-bench-not-a-real-key"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, "--color", "never", *argv], cwd=REPO, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    tail = done.stderr.strip().splitlines()[-1].split()
    if tail[0] != "HWM" or int(tail[2] if tail[2] != "None" else 0) not in ok:
        raise RuntimeError(f"hermes-fleet {argv} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, int(tail[1]) / 1024


def profile_list(binary: Path, home: Path, work: Path) -> float:
    userhome = work / "list-user"
    userhome.mkdir(exist_ok=True)
    env = hermes_env(home, userhome)
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([str(binary), "profile", "list"], env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def shell_loop(binary: Path, work: Path, bots: int, routines: int) -> float:
    root, userhome = work / "loop-root", work / "loop-user"
    root.mkdir()
    userhome.mkdir()
    env = hermes_env(root, userhome)
    start = time.perf_counter()
    for i in range(bots):
        name = bot_name(i)
        subprocess.run([str(binary), "profile", "create", name, "--no-alias"], env=env, check=True, capture_output=True)
        for r in range(routines):
            subprocess.run(
                [str(binary), "-p", name, "cron", "create", "every 2h", f"routine {r} of {name}", "--name", f"r{r}"],
                env=env,
                check=True,
                capture_output=True,
            )
    return time.perf_counter() - start


def slope(points: list[tuple[int, float]]) -> float:
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def profile_run(n: int) -> None:
    with scratch("hf-bench-scale-prof-") as work:
        fleet, home = work / "fleet.yaml", work / "home"
        fleet.write_text(scale_yaml(n), encoding="utf-8")
        for label, argv in (
            ("apply", ["--color", "never", "apply", "-f", str(fleet), "--home", str(home)]),
            ("no-op plan", ["--color", "never", "plan", "--detailed-exitcode", "-f", str(fleet), "--home", str(home)]),
        ):
            prof = cProfile.Profile()
            start = time.perf_counter()
            prof.runcall(quiet_cli, argv)
            wall = time.perf_counter() - start
            buffer = io.StringIO()
            pstats.Stats(prof, stream=buffer).strip_dirs().sort_stats("tottime").print_stats(30)
            print(f"\n=== cProfile: {label}, {n} bots x 3 routines, {wall:.2f} s (top 30 by own time) ===")
            print(buffer.getvalue().strip())


def verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="also 10,000 bots (env HERMES_FLEET_BENCH_FULL=1)")
    parser.add_argument("--quick", action="store_true", help="100 and 200 bots only, 3-bot start-up race")
    parser.add_argument("--profile", type=int, metavar="BOTS", help="cProfile apply and plan of BOTS bots, then exit")
    parser.add_argument("--race", type=int, metavar="BOTS", help="only the start-up race, with BOTS bots x 2 routines")
    args = parser.parse_args()
    if args.profile:
        profile_run(args.profile)
        return 0
    full = args.full or os.environ.get("HERMES_FLEET_BENCH_FULL") == "1"
    sizes = [100, 200] if args.quick else [100, 200, 1000, *([10000] if full else [])]
    if args.race:
        sizes = []
    binary = hermes_bin()
    rows = []
    with scratch("hf-bench-scale-") as work:
        for n in sizes:
            fleet, home = work / f"fleet-{n}.yaml", work / f"home-{n}"
            fleet.write_text(scale_yaml(n), encoding="utf-8")
            os.sync()  # the previous size's removed home is written out before, not inside, this apply's syncfs
            apply_s, apply_mb = run_cli(["apply", "-f", str(fleet), "--home", str(home)])
            plan_s, plan_mb = run_cli(["plan", "--detailed-exitcode", "-f", str(fleet), "--home", str(home)])
            list_s = profile_list(binary, home, work) if binary else math.nan
            rows.append((n, apply_s, apply_mb, plan_s, plan_mb, list_s))
            shutil.rmtree(home, ignore_errors=True)
        race_bots = args.race or (3 if args.quick else GOAL_RACE_BOTS)
        loop_s = apply10 = math.nan
        if binary:
            os.sync()  # each side of the race starts on a clean page cache
            loop_s = shell_loop(binary, work, race_bots, 2)
            fleet, home = work / "race.yaml", work / "race-home"
            fleet.write_text(scale_yaml(race_bots, routines=2), encoding="utf-8")
            run_cli(["validate", "-f", str(fleet)])  # warm: the first run compiles the bytecode
            # The loop's Hermes wrote its files without fsync; the apply's first syncfs(2) would
            # write them out too (0.1-0.25 s here). Flushed first, the apply pays for its own files.
            os.sync()
            apply10, _ = run_cli(["apply", "-f", str(fleet), "--home", str(home)])
    print("bots x 3 routines; each run is one process (start-up included); list = `hermes profile list`, best of 3")
    head = ("bots", "apply s", "ms/bot", "apply MB", "plan s", "plan MB", "list s", "apply/list", "plan/list")
    print(" ".join(f"{h:>10}" for h in head))
    for n, apply_s, apply_mb, plan_s, plan_mb, list_s in rows:
        cells = (n, apply_s, 1000 * apply_s / n, apply_mb, plan_s, plan_mb, list_s, apply_s / list_s, plan_s / list_s)
        print(" ".join(f"{c:>10}" if isinstance(c, int) else f"{c:10.2f}" for c in cells))
    by = {r[0]: r for r in rows}
    if len(rows) < 2:
        report_race(binary, race_bots, loop_s, apply10)
        return 0
    k_apply = slope([(r[0], r[1]) for r in rows])
    k_plan = slope([(r[0], r[3]) for r in rows])
    print(f"fitted exponent (time ~ bots^k, {', '.join(str(n) for n in by)} bots): apply {k_apply:.2f}, plan {k_plan:.2f}")
    print(f"{'goal':<52} {'measured':>10} {'target':>10}  met")

    def goal(label: str, value: float, target: str, ok: bool, note: str = "") -> None:
        print(f"{label:<52} {value:10.2f} {target:>10}  {verdict(ok)}{note}")

    if 1000 in by:
        r = by[1000]
        goal("apply 1,000 bots / hermes profile list", r[1] / r[5], f"<= {GOAL_APPLY_LIST}", r[1] / r[5] <= GOAL_APPLY_LIST)
        goal("apply 1,000 bots / apply 200 bots", r[1] / by[200][1], f"<= {GOAL_GROWTH}", r[1] / by[200][1] <= GOAL_GROWTH)
        goal("no-op plan 1,000 bots / hermes profile list", r[3] / r[5], f"<= {GOAL_PLAN_LIST}", r[3] / r[5] <= GOAL_PLAN_LIST)
    if 10000 in by:
        r = by[10000]
        goal("apply 10,000 bots: seconds", r[1], f"<= {GOAL_10K_S:.0f}", r[1] <= GOAL_10K_S)
        goal("apply 10,000 bots: peak RSS MB", r[2], f"<= {GOAL_10K_MB:.0f}", r[2] <= GOAL_10K_MB)
    else:
        print("10,000 bots: not run (--full, or HERMES_FLEET_BENCH_FULL=1)")
    report_race(binary, race_bots, loop_s, apply10)
    return 0


def report_race(binary: Path | None, race_bots: int, loop_s: float, apply_s: float) -> None:
    if binary:
        ratio = loop_s / apply_s
        label = f"shell loop / apply, {race_bots} bots x 2 routines"
        if race_bots == GOAL_RACE_BOTS:
            print(f"{label:<52} {ratio:10.2f} {'>= ' + str(int(GOAL_STARTUP)):>10}  {verdict(ratio >= GOAL_STARTUP)}", end="")
        else:  # fewer bots leave start-up a larger share of apply: the goal is not judged here
            print(f"{label:<52} {ratio:10.2f} {'-':>10}  (the goal is for {GOAL_RACE_BOTS} bots)", end="")
        print(f"   (loop {loop_s:.2f} s, apply {apply_s:.3f} s)")
    else:
        print("no Hermes CLI (HERMES_FLEET_HERMES_BIN): list ratios and the shell loop not measured")


if __name__ == "__main__":
    raise SystemExit(main())
