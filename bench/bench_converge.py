"""How fast hermes-fleet converges a home, against the shell loop a user writes today.

Run by hand (not part of the test run):

    python bench/bench_converge.py            # 10 / 100 / 1,000 bots
    python bench/bench_converge.py --quick    # 10 / 100 bots, 3-bot shell loop (a smoke run)
    python bench/bench_converge.py --full     # also 10,000 bots
    python bench/bench_converge.py --profile  # also cProfile the 1,000-bot apply and no-op plan

Measures, with the goals from docs/performance.md:
  1. apply on a fresh home and a no-op plan, in-process through controller.cli.main, best of N
     (N=3 below 1,000 bots, 1 from 1,000 up); per-bot microseconds show the scaling;
  2. the real Hermes CLI loop (profile create + 3x config set per bot, one process each), timed
     for 10 bots and extrapolated linearly to 100; ratio loop/apply (goal >= 50x);
  3. one `hermes profile list` on the 1,000-bot home (best of 3) vs the no-op plan (goal <= 1.0);
  4. whether a no-op plan writes anything or spawns a process (goal: no and no);
  5. peak RSS of a 1,000-bot plan in a fresh interpreter (goal < 150 MB).
Everything happens in temp folders that are removed at the end; ~/.hermes is never touched.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, best_of, bot_name, hermes_bin, hermes_env, quiet_cli, scratch, timed, write_fleet

LOOP_GOAL = 50.0  # shell loop / apply, at least
LIST_GOAL = 1.0  # no-op plan / `hermes profile list`, at most
RSS_GOAL_MB = 150.0


@dataclass
class Row:
    bots: int
    apply_s: float
    plan_s: float
    runs: int


def runs_for(n: int) -> int:
    return 3 if n < 1000 else 1


def apply_argv(fleet: Path, home: Path) -> list[str]:
    return ["--color", "never", "apply", "-f", str(fleet), "--home", str(home)]


def plan_argv(fleet: Path, home: Path) -> list[str]:
    # --detailed-exitcode: exit 4 if anything were pending, which quiet_cli turns into an error.
    return ["--color", "never", "plan", "--detailed-exitcode", "-f", str(fleet), "--home", str(home)]


def measure_size(work: Path, n: int) -> tuple[Row, Path, Path]:
    """Best-of-N apply on fresh homes, then best-of-N no-op plan on the last one."""
    fleet = write_fleet(work, n)
    home = work / f"home-{n}"
    runs = runs_for(n)

    def fresh() -> None:
        shutil.rmtree(home, ignore_errors=True)

    apply_s = best_of(runs, lambda: quiet_cli(apply_argv(fleet, home)), setup=fresh)
    plan_s = best_of(runs, lambda: quiet_cli(plan_argv(fleet, home)))
    return Row(n, apply_s, plan_s, runs), fleet, home


# --- 2. the shell loop with the real Hermes CLI --------------------------------------------------


def shell_loop(binary: Path, work: Path, bots: int) -> float:
    """What a user scripts today: four `hermes` processes per bot, on a fresh root."""
    root, userhome = work / "loop-root", work / "loop-user"
    root.mkdir()
    userhome.mkdir()
    env = hermes_env(root, userhome)

    def run(*argv: str) -> None:
        subprocess.run([str(binary), *argv], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def loop() -> None:
        for i in range(bots):
            name = bot_name(i)
            run("profile", "create", name, "--no-alias")
            run("-p", name, "config", "set", "model.provider", "openrouter")
            run("-p", name, "config", "set", "model.default", "anthropic/claude-sonnet-4")
            run("-p", name, "config", "set", "toolsets", "[web, terminal]")

    try:
        return timed(loop)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(userhome, ignore_errors=True)


def profile_list(binary: Path, work: Path, home: Path) -> float:
    userhome = work / "list-user"
    userhome.mkdir(exist_ok=True)
    env = hermes_env(home, userhome)
    return best_of(
        3,
        lambda: subprocess.run(
            [str(binary), "profile", "list"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ),
    )


# --- 4. does a no-op plan write or spawn anything? -----------------------------------------------


def snapshot(tree: Path) -> dict[str, tuple[int, int, int, int]]:
    """(mtime_ns, ctime_ns, size, inode) of every file, folder and link under `tree`."""
    out = {}
    for folder, dirs, files in os.walk(tree):
        for name in [".", *dirs, *files]:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            out[path] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    return out


def count_spawns(fn) -> int:
    """Calls to every process-creating entry point while `fn` runs in this process."""
    calls = 0
    targets = [(subprocess.Popen, "__init__")] + [
        (os, name)
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve")
        if hasattr(os, name)
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name in targets]

    def counting(original):
        def wrapper(*args, **kwargs):
            nonlocal calls
            calls += 1
            return original(*args, **kwargs)

        return wrapper

    for owner, name, original in saved:
        setattr(owner, name, counting(original))
    try:
        fn()
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
    return calls


# --- 5. peak RSS ---------------------------------------------------------------------------------


def peak_rss_mb(fleet: Path, home: Path) -> float:
    """Peak RSS of a fresh interpreter that runs one plan.

    Linux keeps ru_maxrss across fork + exec, so after the in-process 1,000-bot apply it would
    report this (big) parent's peak: the child reads its own VmHWM (KiB) when /proc has it, and
    falls back to resource.getrusage(RUSAGE_SELF).ru_maxrss (KiB on Linux).
    """
    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1]); import common; "
        "common.quiet_cli(sys.argv[2:]); "
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')] "
        "if sys.platform == 'linux' else []; "
        "print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "bench"), *plan_argv(fleet, home)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout
    return int(out.split()[-1]) / 1024


# --- profiling -----------------------------------------------------------------------------------


def profile(label: str, argv: list[str], top: int = 25) -> None:
    prof = cProfile.Profile()
    prof.runcall(quiet_cli, argv)
    buffer = io.StringIO()
    pstats.Stats(prof, stream=buffer).strip_dirs().sort_stats("cumulative").print_stats(top)
    print(f"\n=== cProfile: {label} (top {top} by cumulative time) ===")
    print(buffer.getvalue().strip())


# --- report --------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 bots only, 3-bot shell loop")
    parser.add_argument("--full", action="store_true", help="also 10,000 bots")
    parser.add_argument("--profile", action="store_true", help="cProfile the largest apply and no-op plan")
    args = parser.parse_args(argv)
    sizes = [10, 100] if args.quick else [10, 100, 1000] + ([10000] if args.full else [])
    loop_bots = 3 if args.quick else 10
    binary = hermes_bin()

    big = 1000 if 1000 in sizes else max(sizes)  # the home goals 3, 4 and 5 are measured on

    with scratch() as work:
        rows = []
        for n in sizes:
            row, fleet, home = measure_size(work, n)
            rows.append(row)
            print(f"  measured {n} bots: apply {row.apply_s:.3f}s, no-op plan {row.plan_s:.3f}s", file=sys.stderr)
            if n == big:
                big_fleet, big_home = fleet, home
            else:
                shutil.rmtree(home, ignore_errors=True)
        by_size = {r.bots: r for r in rows}

        before = snapshot(big_home)
        spawns = count_spawns(lambda: quiet_cli(plan_argv(big_fleet, big_home)))
        changed = sorted(p for p, s in snapshot(big_home).items() if before.get(p) != s)
        changed += sorted(set(before) - set(snapshot(big_home)))
        rss = peak_rss_mb(big_fleet, big_home)

        loop_s = list_s = None
        if binary is not None:
            loop_s = shell_loop(binary, work, loop_bots)
            list_s = profile_list(binary, work, big_home)

        print_report(rows, by_size, big, loop_bots, loop_s, list_s, changed, spawns, rss, binary)
        if args.profile:
            profile(f"no-op plan, {big} bots", plan_argv(big_fleet, big_home))
            shutil.rmtree(big_home, ignore_errors=True)
            profile(f"apply on a fresh home, {big} bots", apply_argv(big_fleet, big_home))
    return 0


def print_report(rows, by_size, big, loop_bots, loop_s, list_s, changed, spawns, rss, binary) -> None:
    print(f"\nhermes-fleet converge benchmark ({sys.implementation.name} {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print("\nScaling: apply on a fresh home, no-op plan on the converged home (wall time, best of N)")
    print(f"{'bots':>7} {'N':>2} {'apply s':>9} {'us/bot':>8} {'plan s':>8} {'us/bot':>8}")
    for r in rows:
        print(
            f"{r.bots:>7} {r.runs:>2} {r.apply_s:>9.3f} {r.apply_s / r.bots * 1e6:>8.0f} "
            f"{r.plan_s:>8.3f} {r.plan_s / r.bots * 1e6:>8.0f}"
        )

    print("\nGoals")
    if loop_s is None:
        print("  (hermes CLI not found: set HERMES_FLEET_HERMES_BIN; shell-loop and profile-list rows skipped)")
    else:
        per_bot = loop_s / loop_bots
        print(f"  shell loop, real hermes {binary.parent.parent.name}, 4 processes/bot:")
        print(f"    {loop_bots} bots measured:            {loop_s:8.2f} s  ({per_bot * 1e3:.0f} ms/bot)")
        print(f"    100 bots EXTRAPOLATED (linear): {per_bot * 100:8.2f} s")
        for n, loop_n, label in ((loop_bots, loop_s, "measured"), (100, per_bot * 100, "extrapolated loop")):
            if n in by_size:
                ratio = loop_n / by_size[n].apply_s
                print(
                    f"    loop/apply at {n:>3} bots ({label}): {ratio:7.1f}x   goal >= {LOOP_GOAL:.0f}x  "
                    f"{verdict(ratio >= LOOP_GOAL)}"
                )
        plan_s = by_size[big].plan_s
        ratio = plan_s / list_s
        print(f"  `hermes profile list`, {big} bots, best of 3: {list_s:8.3f} s")
        print(f"  no-op plan, {big} bots:                    {plan_s:8.3f} s")
        print(f"    plan/list ratio: {ratio:.2f}   goal <= {LIST_GOAL:.1f}  {verdict(ratio <= LIST_GOAL)}")
    print(
        f"  no-op plan ({big} bots) writes anything:   {'yes' if changed else 'no'}"
        f"  ({len(changed)} paths changed)   goal: no  {verdict(not changed)}"
    )
    for path in changed[:5]:
        print(f"    changed: {path}")
    print(
        f"  no-op plan spawns a process:              {'yes' if spawns else 'no'}"
        f"  ({spawns} calls)   goal: no  {verdict(not spawns)}"
    )
    print(
        f"  peak RSS, {big}-bot plan (fresh process):  {rss:6.1f} MB   goal < {RSS_GOAL_MB:.0f} MB  {verdict(rss < RSS_GOAL_MB)}"
    )


if __name__ == "__main__":
    sys.exit(main())
