"""External tools some tests drive for real (promtool, prometheus, ansible-playbook).

Where a tool is missing, a developer's run skips the test with the command that installs it; CI
fails instead, so a green CI never hides a missing install step (.ci/run installs them all).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

INSTALL_HINTS = {
    "promtool": "bash .ci/install-prometheus (Debian package `prometheus`)",
    "prometheus": "bash .ci/install-prometheus (Debian package `prometheus`)",
    "ansible-playbook": "scripts/bootstrap (ansible-core is in the `test` extra)",
}


def require_tool(name: str) -> str:
    """The tool's path; skipped locally when it is missing, failed on CI."""
    here = Path(sys.executable).parent / name  # tools installed into this virtualenv come first
    found = str(here) if here.is_file() else shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed: {INSTALL_HINTS.get(name, 'install it')}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
