"""Importing the planner pulls in no adapter and no I/O library (the layer contract, at run time).

`lint-imports` (pyproject.toml) checks the static import graph; this checks what a fresh
interpreter actually loads, lazy imports included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN_PREFIXES = ("controller.adapters", "controller.engine", "controller.verbs")
FORBIDDEN_ROOTS = {"websockets", "httpx", "git", "watchfiles", "sqlite3", "_sqlite3", "ruamel"}  # pydantic itself loads socket


def test_importing_the_planner_loads_no_adapter_or_io_library() -> None:
    code = (
        "import json, sys\n"
        "import controller.core.planning, controller.core.drift, controller.core.types\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    bad = [m for m in loaded if m.split(".")[0] in FORBIDDEN_ROOTS or m.startswith(FORBIDDEN_PREFIXES)]
    assert bad == [], f"the pure core imported {bad}"
    assert "controller.core.planning" in loaded
