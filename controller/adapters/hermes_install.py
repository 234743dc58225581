"""Which Hermes version a home is used with (docs/hermes/versions.md#detection).

Asked without starting Hermes or touching the network: the running interpreter's package
metadata (hermes-fleet as a Hermes plugin), else the interpreter of the `hermes` on PATH.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from controller import bounded
from controller.adapters import inputtrace
from controller.adapters.home import ProfileLayout
from controller.errors import ControllerError, TooLarge

DISTRIBUTION = "hermes-agent"
ENV_OVERRIDE = "HERMES_FLEET_HERMES_VERSION"
PROBE_TIMEOUT = 10.0
# The version, and the folder of its metadata: the answer is the same while that folder and the
# folder that holds it are (a trace of this probe records them: adapters/inputtrace.py).
_ASK = f"import importlib.metadata as m; d = m.distribution({DISTRIBUTION!r}); print(d.version); print(getattr(d, '_path', ''))"


@dataclass(frozen=True)
class Detected:
    version: str | None
    source: str  # how it was found: "--hermes-version", "plugin", "PATH: <file>", or why it is unknown


def detect(explicit: str | None = None) -> Detected:
    if explicit:
        return Detected(explicit, "--hermes-version")
    if os.environ.get(ENV_OVERRIDE):
        return Detected(os.environ[ENV_OVERRIDE], ENV_OVERRIDE)
    try:
        return Detected(importlib.metadata.version(DISTRIBUTION), "this interpreter (plugin)")
    except importlib.metadata.PackageNotFoundError:
        pass
    hermes = shutil.which("hermes")
    if hermes is None:
        return Detected(None, "no hermes on PATH")
    python = _interpreter_of(hermes)
    if python is None:
        return Detected(None, f"{hermes} is not a Python entry point")
    try:
        with inputtrace.expected_process():
            out = subprocess.run([python, "-c", _ASK], capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        inputtrace.taint("the Hermes version could not be asked")
        return Detected(None, f"cannot ask {python}: {exc}")
    version, _, metadata = out.stdout.strip().partition("\n")
    if out.returncode != 0 or not os.path.isabs(metadata):
        inputtrace.taint("the Hermes version probe named no metadata folder")
    else:
        inputtrace.vouch(inputtrace.STAT, [python])
        inputtrace.vouch(inputtrace.FOLDER, [metadata, os.path.dirname(metadata)])
    return (
        Detected(version, f"PATH: {hermes}")
        if out.returncode == 0 and version
        else Detected(None, f"{hermes}: no {DISTRIBUTION} metadata")
    )


@dataclass(frozen=True)
class McpLibrary:
    available: bool | None  # None: no Hermes install was found to ask, or it did not answer
    where: str  # the interpreter asked, or why none was


# The answer, and the folders it was looked for in (the import path): the same while they are (a
# trace of this probe records them: adapters/inputtrace.py).
_ASK_MCP = (
    "import importlib.util as u, os, sys; print('yes' if u.find_spec('mcp') else 'no'); "
    "print('\\0'.join(os.path.abspath(p) for p in sys.path))"
)
MCP_EXTRA = "hermes-agent[mcp]"


def mcp_library(hermes: str | None = None) -> McpLibrary:
    """Whether the Python that runs Hermes can import the `mcp` package, without which Hermes starts
    no MCP server (docs/hermes/no-effect.md#mcp-library). That Python is this interpreter when
    hermes-fleet runs as a Hermes plugin, else the one on the `#!` line of `hermes` (the one on PATH
    unless `hermes` names another). Asked with `importlib.util.find_spec`, which imports nothing;
    from the root folder, so a folder named `mcp` where hermes-fleet was started does not count."""
    if hermes is None:
        try:
            importlib.metadata.version(DISTRIBUTION)
            return McpLibrary(importlib.util.find_spec("mcp") is not None, sys.executable)
        except importlib.metadata.PackageNotFoundError:
            hermes = shutil.which("hermes")
    if hermes is None:
        return McpLibrary(None, "no hermes on PATH")
    python = _interpreter_of(hermes)
    if python is None or not os.path.basename(python).startswith("python"):
        return McpLibrary(None, f"{hermes} is not a Python entry point")
    try:
        with inputtrace.expected_process():
            out = subprocess.run(
                [python, "-c", _ASK_MCP], capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False, cwd=os.sep
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        inputtrace.taint("the mcp library could not be asked about")
        return McpLibrary(None, f"cannot ask {python}: {exc}")
    answer, _, searched = out.stdout.partition("\n")
    folders = [f for f in searched.strip().split("\0") if os.path.isabs(f)]
    if out.returncode != 0 or answer not in ("yes", "no") or not folders:
        inputtrace.taint("the mcp library probe named no import path")
        return McpLibrary(None, f"{python} did not answer")
    inputtrace.vouch(inputtrace.STAT, [python])
    inputtrace.vouch(inputtrace.FOLDER, folders)
    return McpLibrary(answer == "yes", python)


def _interpreter_of(script: str) -> str | None:
    """The interpreter on a console script's `#!` line (pip writes an absolute path)."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    return words[0] if words and os.path.isabs(words[0]) and os.access(words[0], os.X_OK) else None


MANAGED_DEFAULT = "/etc/hermes"  # hermes_cli/managed_scope.py:get_managed_dir (0.19.0)
MANAGED_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ManagedScope:
    path: str
    config: dict[str, Any]  # its config.yaml as plain data ({} when absent or unreadable)
    problem: str = ""  # why its config.yaml could not be read


def managed_scope() -> ManagedScope | None:
    """Hermes' machine-wide managed scope, found the way Hermes finds it: `$HERMES_MANAGED_DIR`
    when it names a folder, else `/etc/hermes` when it exists (docs/hermes/home.md#managed-scope).
    Its values win over every profile's, leaf by leaf; hermes-fleet only reads it, to say so."""
    override = os.environ.get("HERMES_MANAGED_DIR", "").strip()
    folder = override or MANAGED_DEFAULT
    if not os.path.isdir(folder):
        return None
    target = os.path.join(folder, ProfileLayout.CONFIG)  # the same file name as a profile's
    try:
        data = bounded.read_bytes(target, MANAGED_MAX_BYTES)  # a FIFO or a device is refused, never read
    except FileNotFoundError:
        return ManagedScope(folder, {})
    except TooLarge:
        return ManagedScope(folder, {}, f"{target} is larger than {MANAGED_MAX_BYTES} bytes")
    except OSError as exc:
        return ManagedScope(folder, {}, f"cannot read {target}: {exc.strerror}")
    try:
        from controller.adapters.configfile import ConfigDoc

        return ManagedScope(folder, ConfigDoc.parse(data.decode("utf-8"), source=target).as_dict())
    except (ControllerError, UnicodeDecodeError) as exc:
        return ManagedScope(folder, {}, f"{target}: {exc}")
