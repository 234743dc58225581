"""Many machines, one repository: N loopback "machines" x B bots, one git repository, one watcher
each. Run by hand (not part of the tests):

    python bench/bench_machines.py                          # 20 machines x 50 bots, then 5 and 10 for growth
    python bench/bench_machines.py --scales 20 --idle 30    # one scale only
    python bench/bench_machines.py --scales 3 --bots 10     # a smoke run

For each scale N, every machine is a scratch Hermes home with its own `hermes-fleet watch --git
file://<bare repo> --ref main --path fleet --host mK --interval I` (a real subprocess), so the
machines share only the repository and this computer's CPUs. Measured, per scale:
  1. cold start: from starting N watchers to all N converged (each clones and applies its 50 bots);
  2. a commit to ONE machine's slice (one bot's title): from `git push` to that machine `applied`, and
     to all N reconciled at the new commit (the others must say `in-sync`: their slice did not move);
  3. a commit to EVERY slice (an install-wide setting): from the push to all N `applied`;
  4. CPU per idle watcher: CPU time (utime + stime, + reaped git children) of every watcher over
     --idle seconds of steady polling at --interval, as % of one core, mean per watcher, and in total.
Watchers poll git every --interval (+-10 % jitter): a commit waits for the next poll, so commit-to-
converged is about one interval plus the run, and grows with N once the runs outnumber the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def fleet_doc(machines: int, bots: int, *, edited: str = "", version: int = 0, timezone: str = "UTC") -> str:
    spec: dict[str, Any] = {
        "config": {"timezone": timezone},
        "bots": [
            {
                "name": f"m{m:02d}-bot{b:03d}",
                "host": f"m{m:02d}",
                "title": f"Bot {b} of m{m:02d}" + (f" v{version}" if f"m{m:02d}-bot{b:03d}" == edited else ""),
                "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"},
                "toolsets": ["web"],
                "soul": f"You are bot {b} on machine {m}.\n",
            }
            for m in range(1, machines + 1)
            for b in range(bots)
        ],
    }
    doc = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "bench"}, "spec": spec}
    return json.dumps(doc, indent=1) + "\n"


class Repo:
    def __init__(self, base: Path) -> None:
        self.bare, self.work = base / "fleet.git", base / "work"
        git(base, "init", "-q", "--bare", "--initial-branch=main", str(self.bare))
        git(base, "init", "-q", "--initial-branch=main", str(self.work))
        for key, value in (("user.name", "Bench"), ("user.email", "bench@example.invalid"), ("commit.gpgsign", "false")):
            git(self.work, "config", key, value)
        git(self.work, "remote", "add", "origin", str(self.bare))

    def push(self, text: str, message: str) -> tuple[str, float]:
        path = self.work / "fleet" / "fleet.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD"), time.perf_counter()


class Watcher:
    """One machine's `hermes-fleet watch`; its JSON log lines are read into a queue as they come."""

    def __init__(self, base: Path, name: str, url: str, interval: float) -> None:
        self.name = name
        user = base / f"user-{name}"
        user.mkdir()
        env = {**os.environ, "HOME": str(user), "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
        env.pop("HERMES_HOME", None)
        argv = [sys.executable, "-m", "controller", "watch", "--git", url, "--ref", "main", "--path", "fleet"]
        argv += ["--home", str(base / f"home-{name}"), "--host", name, "--interval", str(interval), "--log-format", "json"]
        self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.events.put((time.perf_counter(), event))

    def reconciled_at(self, revision: str, timeout: float) -> tuple[float, str]:
        """When this watcher logged a run at `revision`, and its result."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                at, event = self.events.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if event.get("event") == "reconciled" and revision.startswith(str(event.get("revision"))):
                return at, str(event["result"])
        raise SystemExit(f"{self.name}: no run at {revision[:12]} within {timeout}s (exit {self.proc.poll()})")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / TICK  # utime, stime, cutime, cstime

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def all_at(watchers: list[Watcher], revision: str, timeout: float) -> dict[str, tuple[float, str]]:
    return {w.name: w.reconciled_at(revision, timeout) for w in watchers}


def scale(machines: int, bots: int, interval: float, idle: float, timeout: float) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix=f"hf-bench-machines-{machines}-"))
    watchers: list[Watcher] = []
    try:
        repo = Repo(base)
        first, _ = repo.push(fleet_doc(machines, bots), "first")
        started = time.perf_counter()
        watchers = [Watcher(base, f"m{m:02d}", repo.bare.as_uri(), interval) for m in range(1, machines + 1)]
        cold = all_at(watchers, first, timeout)
        bad = {n: r for n, (_, r) in cold.items() if r != "applied"}
        if bad:
            raise SystemExit(f"cold start: {bad}")
        cold_s = max(at for at, _ in cold.values()) - started
        time.sleep(interval * 1.2)  # every watcher past its first interval run

        one, pushed = repo.push(fleet_doc(machines, bots, edited="m01-bot000", version=1), "one slice")
        ones = all_at(watchers, one, timeout)
        results = [r for _, r in ones.values()]
        one_changed = ones["m01"][0] - pushed
        one_all = max(at for at, _ in ones.values()) - pushed
        if ones["m01"][1] != "applied" or results.count("in-sync") != machines - 1:
            raise SystemExit(f"one-slice commit: {ones}")
        time.sleep(interval * 1.2)

        cpu0 = {w.name: w.cpu_seconds() for w in watchers}
        t0 = time.perf_counter()
        time.sleep(idle)
        t1 = time.perf_counter()
        cpu = [100.0 * (w.cpu_seconds() - cpu0[w.name]) / (t1 - t0) for w in watchers]

        every, pushed = repo.push(fleet_doc(machines, bots, edited="m01-bot000", version=1, timezone="Europe/Berlin"), "all")
        everys = all_at(watchers, every, timeout)
        if any(r != "applied" for _, r in everys.values()):
            raise SystemExit(f"fleet-wide commit: {everys}")
        every_all = max(at for at, _ in everys.values()) - pushed
        every_median = statistics.median(at - pushed for at, _ in everys.values())
        return {
            "machines": machines,
            "bots": machines * bots,
            "cold_s": cold_s,
            "one_changed_s": one_changed,
            "one_all_s": one_all,
            "every_median_s": every_median,
            "every_all_s": every_all,
            "cpu_mean_pct": statistics.mean(cpu),
            "cpu_max_pct": max(cpu),
            "cpu_total_pct": sum(cpu),
        }
    finally:
        for watcher in watchers:
            watcher.stop()
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="20,5,10", help="numbers of machines, comma-separated (default 20,5,10)")
    parser.add_argument("--bots", type=int, default=50, help="bots per machine (default 50)")
    parser.add_argument("--interval", type=float, default=10.0, help="each watcher's --interval (default 10 s)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of steady polling to measure CPU over")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    if not Path("/proc/self/stat").exists():
        raise SystemExit("needs Linux /proc for the CPU measurement")
    rows = []
    for machines in (int(x) for x in args.scales.split(",")):
        load = os.getloadavg()[0]
        print(f"... {machines} machines x {args.bots} bots (load average {load:.1f})", flush=True)
        rows.append(scale(machines, args.bots, args.interval, args.idle, args.timeout))
    rows.sort(key=lambda r: r["machines"])
    print(f"\nhermes-fleet watch: one git repository, one watcher per machine, {args.bots} bots each, "
          f"--interval {args.interval:g} s, {os.cpu_count()} CPU(s)")  # fmt: skip
    head = ("machines", "bots", "cold start", "1 slice: it", "1 slice: all", "all: median", "all: last",
            "idle CPU/watcher", "idle CPU total")  # fmt: skip
    print(" | ".join(head))
    for r in rows:
        print(
            f"{r['machines']:>8} | {r['bots']:>4} | {r['cold_s']:>8.1f} s | {r['one_changed_s']:>9.1f} s | "
            f"{r['one_all_s']:>10.1f} s | {r['every_median_s']:>9.1f} s | {r['every_all_s']:>7.1f} s | "
            f"{r['cpu_mean_pct']:>11.2f} % (max {r['cpu_max_pct']:.2f}) | {r['cpu_total_pct']:>10.2f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
