"""Shared helpers for the hand-run benchmarks: fleet generators, temp homes, timing.

Nothing here touches ~/.hermes: every home is a fresh temp folder, removed afterwards.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SECRET_ENV = "HERMES_FLEET_BENCH_KEY"  # every bot's from_env secret reads this variable
SECTIONS = ("Research", "Writing", "Ops", "Support")


def bot_name(i: int) -> str:
    return f"bot{i:05d}"


def fleet_yaml(n: int, fleet: str = "bench") -> str:
    """One Fleet document with `n` bots, each setting every field the converge benchmark measures:
    title, description, section, model pin, toolsets, an env literal + a from_env secret, a soul
    and one config passthrough key."""
    lines = ["apiVersion: hermes-fleet/v1", "kind: Fleet", f"metadata: {{name: {fleet}}}", "spec:", "  sections:"]
    lines += [f"    - {{name: {s}}}" for s in SECTIONS]
    lines.append("  bots:")
    for i in range(n):
        name = bot_name(i)
        lines += [
            f"    - name: {name}",
            f"      title: Bench Bot {i}",
            f"      description: Benchmark bot number {i}; answers questions about topic {i % 97}.",
            f"      section: {SECTIONS[i % len(SECTIONS)]}",
            "      model: {provider: openrouter, default: anthropic/claude-sonnet-4}",
            "      toolsets: [web, terminal]",
            "      env:",
            f"        BENCH_LABEL: label-{i}",
            f"        OPENROUTER_API_KEY: {{from_env: {SECRET_ENV}}}",
            "      soul: |",
            f"        You are bench bot {i}. Be calm and concise.",
            "        Say what you know, say what you do not.",
            "      config:",
            f"        agent: {{max_turns: {20 + i % 10}}}",
        ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def scratch(prefix: str = "hf-bench-") -> Iterator[Path]:
    """A temp folder, removed on exit (also on error)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_fleet(folder: Path, n: int) -> Path:
    path = folder / f"fleet-{n}.yaml"
    path.write_text(fleet_yaml(n), encoding="utf-8")
    return path


def quiet_cli(argv: list[str]) -> int:
    """controller.cli.main in-process with stdout silenced; a non-zero exit is an error here."""
    from controller import cli

    os.environ.setdefault(SECRET_ENV, "sk-bench-not-a-real-key")
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    if code != 0:
        raise RuntimeError(f"hermes-fleet {' '.join(argv)} exited {code}")
    return code


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_of(n: int, fn: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    """Best wall time of `n` runs of `fn` (`setup`, untimed, runs before each)."""
    best = float("inf")
    for _ in range(n):
        if setup is not None:
            setup()
        best = min(best, timed(fn))
    return best


# --- the real Hermes CLI ------------------------------------------------------------------------

HERMES_VERSION = "0.19.0"


def hermes_bin() -> Path | None:
    """$HERMES_FLEET_HERMES_BIN, else the venv .ci/install-hermes creates; None if neither exists."""
    explicit = os.environ.get("HERMES_FLEET_HERMES_BIN")
    candidate = (
        Path(explicit)
        if explicit
        else (Path.home() / ".cache" / "hermes-fleet" / f"hermes-agent-{HERMES_VERSION}" / "bin" / "hermes")
    )
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def hermes_env(root: Path, userhome: Path) -> dict[str, str]:
    """A scrubbed environment: HOME and HERMES_HOME point into the scratch folder, never ~/.hermes."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HERMES_")
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    env.update(HOME=str(userhome), HERMES_HOME=str(root), NO_COLOR="1", TERM="dumb")
    return env
