"""How fast hermes-fleet converges routines: 1,000 bots x 3 routines by default.

Run by hand (not part of the test run):

    python bench/bench_routines.py              # 1,000 bots x 3 routines
    python bench/bench_routines.py --bots 100   # a smaller smoke run

Measures, in-process through controller.cli.main with stdout silenced, on a fresh temp home:
  1. apply (creates every profile and writes every bot's own cron/jobs.json);
  2. a no-op plan right after (reads every store; --detailed-exitcode, so pending work is an error);
  3. apply after one routine per bot changed (one locked read-modify-write per bot);
and prints seconds and microseconds per routine. The temp home is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bot_name, quiet_cli, scratch, timed

ROUTINES_PER_BOT = 3


def fleet_yaml(n: int, version: int = 0) -> str:
    """`n` bots, each with a cron, an interval and a paused routine (the v2 prompt for all)."""
    lines = ["apiVersion: hermes-fleet/v1", "kind: Fleet", "metadata: {name: bench}", "spec:", "  bots:"]
    for i in range(n):
        lines += [
            f"    - name: {bot_name(i)}",
            f"      title: Bench Bot {i}",
            "      routines:",
            f"        - {{name: Morning digest, schedule: '{i % 60} 8 * * 1-5', prompt: 'Summarize news v{version}',"
            " deliver: bot-chat, skills: [notes]}",
            "        - {name: Inbox sweep, schedule: every 2h, prompt: \"Check the inbox, reply to 'urgent'\"}",
            "        - {name: Weekly report, schedule: '0 17 * * 5', prompt: Write the report, paused: true,"
            " paused_reason: bench}",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bots", type=int, default=1000)
    args = parser.parse_args()
    n = args.bots
    total = n * ROUTINES_PER_BOT
    with scratch("hf-bench-routines-") as work:
        fleet, home = work / "fleet.yaml", work / "home"
        fleet.write_text(fleet_yaml(n), encoding="utf-8")
        common = ["--color", "never"]
        apply_s = timed(lambda: quiet_cli([*common, "apply", "-f", str(fleet), "--home", str(home)]))
        plan_s = timed(lambda: quiet_cli([*common, "plan", "--detailed-exitcode", "-f", str(fleet), "--home", str(home)]))
        fleet.write_text(fleet_yaml(n, version=1), encoding="utf-8")
        update_s = timed(lambda: quiet_cli([*common, "apply", "-f", str(fleet), "--home", str(home)]))
        sample = json.loads((home / "profiles" / bot_name(0) / "cron" / "jobs.json").read_text())["jobs"]
        assert len(sample) == ROUTINES_PER_BOT and "v1" in sample[0]["prompt"], sample
    print(f"routines: {n:,} bots x {ROUTINES_PER_BOT} routines = {total:,} jobs (fresh temp home)")
    print(f"{'operation':<34}{'seconds':>10}{'us/routine':>14}")
    for label, secs in (("apply (fresh home)", apply_s), ("no-op plan", plan_s), ("apply (1 routine/bot changed)", update_s)):
        print(f"{label:<34}{secs:>10.2f}{secs / total * 1e6:>14.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
