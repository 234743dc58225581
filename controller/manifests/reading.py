"""The manifest pipeline in one call: discover -> parse -> validate -> desired state (-> host slice)."""

from __future__ import annotations

import socket
from pathlib import Path

from controller.manifests import desired, loading, validating


def load_paths(paths: list[str], *, recursive: bool, fleet: str | None, skip: Path | None = None) -> validating.ValidationResult:
    """Discover, parse and validate the manifests under `paths`; problems become diagnostics."""
    files = loading.discover(paths, recursive=recursive, skip=skip)
    with loading.gc_paused():
        documents, problems = loading.load_files(files)
        result = validating.validate(documents, fleet=fleet, files=files)
    result.diagnostics[:0] = problems
    if problems:
        result.state = None
    return result


def selected_host(explicit: str | None, state: desired.DesiredState) -> str | None:
    """The machine whose slice applies: --host, else this hostname when the fleet names hosts."""
    if explicit:
        return str(explicit)
    return socket.gethostname() if desired.uses_hosts(state) else None
