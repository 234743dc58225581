"""Benchmark: load + validate realistic fleets (1,000 and 10,000 bots) in both manifest forms,
and the cold start of `hermes-fleet --help`.

    python bench/bench_validate.py            # full run
    python bench/bench_validate.py --quick    # 1,000 bots only
    python bench/bench_validate.py --profile  # cProfile top functions for the 10,000-bot single file

The figure is what a verb gets: a large many-file fleet has part of its files parsed by a forked
child meanwhile (controller/manifests/parallel.py). The "one process" column is the same pipeline
with that child forbidden, measured in the same run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.manifests import parallel, reading, validating  # noqa: E402

GOAL_BOTS_PER_SECOND = 5_000
GOAL_HELP_MS = 150
SECTIONS = ["Research", "Writing", "Support", "Ops", "Sales", "Clients", "Infra", "Labs"]
SCHEDULES = ["0 8 * * 1-5", "every 30m", "every 2h", "30 6 * * *", "every 1d", "0 */4 * * *"]


def bot(i: int) -> dict:
    name = f"bot-{i:05d}"
    spec: dict = {
        "title": f"Agent {i:05d}",
        "description": f"Bot number {i} of the benchmark fleet.",
        "section": SECTIONS[i % len(SECTIONS)],
        "soul": f"You are bot {i}. Be brief and correct.\n",
        "toolsets": ["web", "terminal"] if i % 2 else ["web"],
        "env": {"OPENROUTER_API_KEY": {"from_env": "OPENROUTER_API_KEY"}, "LOG_LEVEL": "info"},
        "config": {"approvals.mode": "smart", "memory": {"memory_char_limit": 4000 + i % 7}},
        "avatar": {"kind": "blob", "seed": name, "silhouette": "round"},
        "routines": [{"name": "digest", "schedule": SCHEDULES[i % len(SCHEDULES)], "prompt": "Summarize the news."}],
    }
    if i % 5 == 0:
        spec["model"] = {"provider": "anthropic", "default": "claude-opus-4"}
        spec["mcp_servers"] = {"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": {"from_env": "GH_TOKEN"}}}}
    return {"name": name, **spec}


def policy() -> dict:
    return {
        "defaults": {"model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"}},
        "gateway": {"bot_loop_guard": {"enabled": True, "max_hops": 4}, "bot_mode_protocol": True},
        "checkpoints": {"enabled": False, "max_total_size_mb": 500},
        "config": {"timezone": "Europe/Berlin"},
    }


def rooms(n: int) -> list[dict]:
    return [
        {
            "name": f"Room {r}",
            "members": [f"bot-{m:05d}" for m in range(r * 4, r * 4 + 4)],
            "who_answers": f"lead:bot-{r * 4:05d}",
        }
        for r in range(n // 10)
    ]


def write_single(folder: Path, n: int) -> int:
    spec = {
        **policy(),
        "sections": [{"name": s} for s in SECTIONS],
        "bots": [bot(i) for i in range(n)],
        "rooms": rooms(n),
        "peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "SPARK_PEER_KEY"}}],
    }
    doc = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "bench"}, "spec": spec}
    (folder / "fleet.yaml").write_text(_yaml(doc))
    return 1


def write_many(folder: Path, n: int, per_file: int = 100) -> int:
    def envelope(kind: str, name: str, spec: dict) -> dict:
        return {
            "apiVersion": "hermes-fleet/v1",
            "kind": kind,
            "metadata": {"name": name, "fleet": "bench"},
            "spec": spec,
        }

    (folder / "policy.yaml").write_text(_yaml(envelope("Policy", "install", policy())))
    (folder / "sections.yaml").write_text("---\n".join(_yaml(envelope("Section", s, {})) for s in SECTIONS))
    (folder / "rooms.yaml").write_text("---\n".join(_yaml(envelope("Room", r.pop("name"), r)) for r in rooms(n)) or "# none\n")
    (folder / "peers.yaml").write_text(_yaml(envelope("Peer", "spark", {"url": "http://spark.lan:8642"})))
    files = 4
    (folder / "bots").mkdir()
    for start in range(0, n, per_file):
        docs = []
        for i in range(start, min(n, start + per_file)):
            b = bot(i)
            routines = b.pop("routines")
            docs.append(_yaml(envelope("Bot", b.pop("name"), b)))
            for r in routines:  # routines as their own documents
                docs.append(_yaml(envelope("Routine", r.pop("name"), {"bot": f"bot-{i:05d}", **r})))
        (folder / "bots" / f"bots-{start // per_file:04d}.yaml").write_text("---\n".join(docs))
        files += 1
    return files


def _yaml(doc: dict) -> str:
    """Block-style YAML (what people write), via ruamel's round-trip dumper."""
    from ruamel.yaml import YAML

    stream = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.dump(json.loads(json.dumps(doc)), stream)
    return stream.getvalue()


def load_and_validate(folder: Path) -> validating.ValidationResult:
    """The pipeline every verb runs (manifests.reading: discover, parse and validate with the
    collector paused), so the figure is what `validate` costs past its start-up. The desired
    state's digest is made on first read (`validate -o json`, plan and apply read it), so it is
    not in this figure."""
    result = reading.load_paths([str(folder)], recursive=True, fleet=None)
    if result.errors or result.state is None:
        raise SystemExit("benchmark fleet is invalid:\n" + "\n".join(d.render() for d in result.errors))
    return result


def one_process(folder: Path) -> validating.ValidationResult:
    """load_and_validate with no forked child (parallel.start declines)."""
    with mock.patch.object(parallel, "start", lambda *args, **kwargs: None):
        return load_and_validate(folder)


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def help_cold_start_ms(runs: int = 5) -> float:
    exe = shutil.which("hermes-fleet")
    cmd = [exe, "--help"] if exe else [sys.executable, "-m", "controller", "--help"]
    return 1000 * best_of(runs, lambda: subprocess.run(cmd, capture_output=True, check=True, cwd=REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    sizes = [1_000] if args.quick else [1_000, 10_000]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hermes-fleet-bench-") as tmp:
        for n in sizes:
            for form, writer in (("single Fleet file", write_single), ("many documents", write_many)):
                folder = Path(tmp) / f"{n}-{form.split()[0]}"
                folder.mkdir()
                files = writer(folder, n)
                result = load_and_validate(folder)
                assert result.state is not None and result.state.counts["bots"] == n
                # A verb holds no earlier fleet while it loads one: with this one alive, the forked
                # child and this process would copy its shared pages on write (about 0.1 s at 10,000).
                del result
                seconds = best_of(3, lambda folder=folder: load_and_validate(folder))
                alone = best_of(3, lambda folder=folder: one_process(folder))
                rows.append((n, form, files, seconds, n / seconds, n / alone))
                if args.profile and n == sizes[-1] and form.startswith("single"):
                    profiler = cProfile.Profile()
                    profiler.enable()
                    load_and_validate(folder)
                    profiler.disable()
                    stats = io.StringIO()
                    pstats.Stats(profiler, stream=stats).sort_stats("cumulative").print_stats(25)
                    print(stats.getvalue())
    help_ms = help_cold_start_ms()

    print(f"{'bots':>7}  {'form':<18} {'files':>5}  {'seconds':>8}  {'bots/s':>8}  {'one process':>11}  goal")
    for n, form, files, seconds, rate, alone in rows:
        verdict = "ok" if rate >= GOAL_BOTS_PER_SECOND else "BELOW GOAL"
        print(
            f"{n:>7,}  {form:<18} {files:>5}  {seconds:>8.3f}  {rate:>8,.0f}  {alone:>11,.0f}"
            f"  >= {GOAL_BOTS_PER_SECOND:,} bots/s: {verdict}"
        )
    verdict = "ok" if help_ms < GOAL_HELP_MS else "BELOW GOAL"
    print(f"hermes-fleet --help cold start (best of 5): {help_ms:.0f} ms  goal < {GOAL_HELP_MS} ms: {verdict}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
