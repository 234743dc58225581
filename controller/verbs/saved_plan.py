"""Saved plans: `plan --out FILE` writes the plan with what it was made against, and `apply --plan
FILE` applies it only when nothing changed since (docs/cli.md#saved-plans).

The file holds the manifests' digest, the home, the options, a digest of every home file the plan
depends on (adapters/fingerprint.py) and the plan's objects as `plan -o json` prints them: secret
values are never in it, only `(secret)`. Under the apply lock, right before the first write, the
home is fingerprinted and planned again; any difference refuses the apply (exit 3, nothing written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import fingerprint, fsio
from controller.core.types import Options
from controller.engine.reconciling import Planned
from controller.errors import ConflictError, UsageError
from controller.verbs import reporting

KIND = "saved-plan"
VERSION = 1
MAX_BYTES = 512 * 1024 * 1024  # a 10,000-bot first plan is about 200 MB as JSON
SHOWN = 5  # changed files or objects named in a refusal


def objects(planned: Planned) -> list[dict[str, Any]]:
    """The plan's objects exactly as `plan -o json` prints them."""
    data: list[dict[str, Any]] = json.loads(reporting.plan_json(planned.plan, home=str(planned.root)))["objects"]
    return data


def save(path: str, planned: Planned, *, host: str | None, options: Options, hermes_version: str | None) -> None:
    files = fingerprint.observed_files(planned.root)
    data = {
        "schemaVersion": VERSION,
        "kind": KIND,
        "fleet": planned.plan.fleet,
        "digest": planned.plan.digest,
        "home": str(planned.root),
        "host": host,
        "hermes_version": hermes_version,
        "options": {"prune": options.prune, "adopt": options.adopt, "rooms": options.rooms, "rehost": options.rehost},
        "selection": planned.selection,
        "observed": {"digest": fingerprint.digest(files), "files": files},
        "objects": objects(planned),
    }
    try:
        # 0600: it holds a digest of every home file, `.env` included (no value, but not for everyone).
        fsio.atomic_write_text(Path(path), json.dumps(data, indent=1, sort_keys=True) + "\n", mode=0o600)
    except OSError as exc:
        raise UsageError(f"cannot write the plan to {path}: {exc.strerror or exc}") from exc


def load(path: str) -> dict[str, Any]:
    try:
        data = json.loads(bounded.read_bytes(path, MAX_BYTES))
    except OSError as exc:
        raise UsageError(f"cannot read the plan file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise UsageError(f"{path} is not a saved plan (not JSON: {exc})", hint="make one with `plan --out FILE`") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UsageError(f"{path} is not a saved plan", hint="make one with `hermes-fleet plan --out FILE`")
    if data.get("schemaVersion") != VERSION:
        raise UsageError(f"{path} is a saved plan of another format ({data.get('schemaVersion')!r}); make it again")
    if not _well_formed(data):
        raise UsageError(f"{path} is not a saved plan (a field has the wrong type)", hint="make it again with `plan --out FILE`")
    return data


def _well_formed(data: dict[str, Any]) -> bool:
    """The types `save` writes, where `apply --plan` relies on them (a hand-edited file is a usage
    error, never a traceback under the apply lock)."""
    observed = data.get("observed")
    return (
        all(isinstance(data.get(k), str) for k in ("digest", "home"))
        and isinstance(data.get("options"), dict)
        and isinstance(observed, dict)
        and isinstance(observed.get("digest"), str)
        and isinstance(observed.get("files"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in observed["files"].items())
        and isinstance(data.get("objects"), list)
        and all(isinstance(o, dict) for o in data["objects"])
        and isinstance(data.get("selection", ""), str)
        and (data.get("host") is None or isinstance(data.get("host"), str))
    )


def options_of(saved: dict[str, Any], *, yes: bool) -> Options:
    chosen = saved["options"]
    return Options(
        prune=bool(chosen.get("prune")),
        adopt=bool(chosen.get("adopt")),
        yes=yes,
        rooms=bool(chosen.get("rooms", True)),
        rehost=bool(chosen.get("rehost")),
    )


def check_inputs(saved: dict[str, Any], path: str, *, digest: str, home: Path, host: str | None, selection: str) -> None:
    """Refuse (exit 3) before anything is read from the home when the manifests, home or host differ."""
    changed = []
    if saved["digest"] != digest:
        changed.append(f"the manifests changed (plan made from {saved['digest'][:19]}, now {digest[:19]})")
    if saved["home"] != str(home):
        changed.append(f"it was made for the home {saved['home']}, not {home}")
    if saved.get("host") != host:
        changed.append(f"it was made for host {saved.get('host')!r}, not {host!r}")
    if saved.get("selection", "") != selection:
        changed.append(f"it was made with the selection {saved.get('selection') or '(none)'!r}, not {selection or '(none)'!r}")
    if changed:
        raise refusal(path, changed)


def check_home(saved: dict[str, Any], path: str, planned: Planned) -> None:
    """Refuse (exit 3) when the home's files or the plan made now differ from the saved ones."""
    changed = []
    files = fingerprint.observed_files(planned.root)
    if fingerprint.digest(files) != saved["observed"]["digest"]:
        changed.append("the home changed: " + _differences(saved["observed"]["files"], files))
    now = objects(planned)
    if now != saved["objects"]:
        before = {f"{o.get('kind')}/{o.get('name')}": o for o in saved["objects"]}
        after = {f"{o['kind']}/{o['name']}": o for o in now}
        keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        changed.append("the plan made now differs for " + _names(keys))
    if changed:
        raise refusal(path, changed)


def refusal(path: str, changed: list[str]) -> ConflictError:
    return ConflictError(
        f"the saved plan {path} is stale, nothing was changed: " + "; ".join(changed),
        hint="run `hermes-fleet plan --out FILE` again, review it, and apply that",
    )


def _differences(before: dict[str, str], after: dict[str, str]) -> str:
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    edited = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    parts = [f"{what} {_names(keys)}" for what, keys in (("edited", edited), ("new", added), ("gone", removed)) if keys]
    return ", ".join(parts)


def _names(keys: list[str]) -> str:
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more
