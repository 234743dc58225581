"""Benchmark: the cost of diagnostics grows linearly with their number, and the output stays capped.

    python bench/bench_diagnostics.py            # 10,000 / 40,000 / 100,000 errors
    python bench/bench_diagnostics.py --quick    # 10,000 / 40,000

One Fleet file whose bots carry N unknown keys in all (25,000 per bot: a map holds at most 100,000
entries), each key a distinct `unknown_field` error. Times, in-process and best of 3, discovery +
parsing + validation + the text and JSON reports, and prints seconds, microseconds per error, the
ratio to the smallest size (linear: the ratio of the counts), the lines of text output (capped at
diagnostics.MAX_SHOWN plus the "... and N more" line) and the goal (100,000 errors < 2 s). Before
the index of mapping keys (loading._step) and the cap on "did you mean", 40,000 errors took 26 s
and 100,000 took 154 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.diagnostics import MAX_SHOWN  # noqa: E402
from controller.manifests import reading  # noqa: E402
from controller.verbs import reporting  # noqa: E402

GOAL_SECONDS_100K = 2.0
PER_BOT = 25_000


def write(folder: Path, errors: int) -> Path:
    bots = []
    for b in range(0, errors, PER_BOT):
        bots.append({"name": f"bot{b // PER_BOT}", **{f"unknown_{i}": i for i in range(b, min(errors, b + PER_BOT))}})
    doc = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "bench"}, "spec": {"bots": bots}}
    path = folder / f"errors-{errors}.yaml"
    path.write_text(json.dumps(doc, indent=1))  # JSON is YAML: one key per line
    return path


def run(path: Path) -> tuple[int, int]:
    result = reading.load_paths([str(path)], recursive=False, fleet=None)
    text = reporting.validation_text(result, strict=False, color=False)
    reporting.validation_json(result, strict=False)
    return len(result.errors), text.count("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [10_000, 40_000] if args.quick else [10_000, 40_000, 100_000]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hermes-fleet-bench-") as tmp:
        for n in sizes:
            path = write(Path(tmp), n)
            best, found, lines = float("inf"), 0, 0
            for _ in range(3):
                start = time.perf_counter()
                found, lines = run(path)
                best = min(best, time.perf_counter() - start)
            assert found == n, (found, n)
            rows.append((n, best, lines))
    base_n, base_s, _ = rows[0]
    print(f"{'errors':>8}  {'seconds':>8}  {'us/error':>8}  {'time ratio':>10}  {'count ratio':>11}  {'text lines':>10}  goal")
    for n, seconds, lines in rows:
        goal = f"< {GOAL_SECONDS_100K:g} s: {'ok' if seconds < GOAL_SECONDS_100K else 'BELOW GOAL'}" if n == 100_000 else ""
        print(
            f"{n:>8,}  {seconds:>8.3f}  {1e6 * seconds / n:>8.1f}  {seconds / base_s:>10.1f}  {n / base_n:>11.1f}  "
            f"{lines:>10,}  {goal}"
        )
    print(f"text output: at most {MAX_SHOWN:,} diagnostics, then one '... and N more' line, then the summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
