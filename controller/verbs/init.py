"""`init [DIR]`: scaffold a fleet repository (manifests, schema, pre-commit hook, CI workflow).

What `terraform init` / `flux bootstrap` are to their projects: a starting point that validates
as it is, with the checks a fleet repository should run from its first commit. It never overwrites
a file: one that exists is kept and reported. Touches no Hermes home.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path

from controller.adapters import fsio
from controller.errors import ExitCode, UsageError
from controller.hermes import naming
from controller.manifests import schema
from controller.verbs import common, reporting

# target path in the new repository -> template in controller/data/init/ (None: generated)
FILES: dict[str, str | None] = {
    "fleet/fleet.yaml": "fleet.yaml",
    "fleet/policy.yaml": "policy.yaml",
    "fleet/bots/assistant.yaml": "assistant.yaml",
    "fleet/bots/souls/assistant.md": "assistant.md",
    "schemas/hermes-fleet.json": None,
    ".pre-commit-config.yaml": "pre-commit-config.yaml",
    ".github/workflows/fleet.yml": "workflow.yml",
}
PLACEHOLDER_SOURCE = "https://github.com/YOUR-ORG/hermes-fleet"
UNPINNED_REV = "main"  # no release tag exists; without --rev or a checkout's commit, the branch
_SCP_LIKE = re.compile(r"^(?P<user>[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>(?!//)[^\s]+)$")


def cmd_init(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder", hint="pass a folder to create or to add the files to")
    fleet = args.fleet or fleet_name_for(folder)
    problem = naming.profile_name_problem(fleet)
    if problem:
        raise UsageError(f"invalid fleet name {fleet!r}: {problem}", hint="pass --fleet NAME (^[a-z0-9][a-z0-9_-]{0,63}$)")
    source, rev, found = hook_source(args.source, args.rev)
    install = pip_url(source) if found else None
    values = {
        "__FLEET__": fleet,
        "__SOURCE__": source,
        "__REV__": rev,
        "__PIP__": f"{install or pip_url(PLACEHOLDER_SOURCE)}@{rev}",
    }
    written, kept = [], []
    for rel, template in FILES.items():
        target = folder / rel
        if target.exists() or target.is_symlink():
            kept.append(rel)
            continue
        fsio.make_dirs(target.parent)
        fsio.atomic_write_text(target, render(template, values), expect=None)  # never over a file made meanwhile
        written.append(rel)
    notes = []
    if not found:
        notes.append(
            f"set the URL of your copy of hermes-fleet in .pre-commit-config.yaml and .github/workflows/fleet.yml "
            f"(now {PLACEHOLDER_SOURCE}), or run init again with --source URL --rev TAG on an empty folder"
        )
    elif install is None:
        notes.append(
            f"{source} is not a URL a CI runner can fetch; set the URL of your copy of hermes-fleet in "
            ".pre-commit-config.yaml and .github/workflows/fleet.yml, or run init again with --source URL --rev TAG"
        )
    if rev == UNPINNED_REV:
        notes.append(f"the hook and the CI install follow {UNPINNED_REV!r}; pin a tag or commit with --rev")
    if args.output == "json":
        payload = {
            "schemaVersion": reporting.JSON_SCHEMA_VERSION,
            "kind": "init",
            "folder": str(folder),
            "fleet": fleet,
            "written": written,
            "kept": kept,
            "notes": notes,
        }
        reporting.write(json.dumps(payload, indent=2) + "\n")
        common.wrote_report(args)
        return ExitCode.OK
    for rel in written:
        print(f"created {folder / rel}")
    for rel in kept:
        print(f"kept    {folder / rel} (it exists; init never overwrites)")
    for note in notes:
        print(f"hermes-fleet init: note: {note}", file=sys.stderr)
    print(
        f"\nFleet {fleet!r} is ready in {folder}. Next:\n"
        f"  cd {shlex.quote(str(folder))}\n"
        "  hermes-fleet validate -f fleet/        # what CI runs (.github/workflows/fleet.yml)\n"
        "  hermes-fleet plan -f fleet/            # what apply would change in ~/.hermes (--home DIR for another)\n"
        "  pre-commit install                     # validate on every commit (.pre-commit-config.yaml)"
    )
    return ExitCode.OK


def render(template: str | None, values: dict[str, str]) -> str:
    if template is None:  # the JSON Schema, for the editor's $schema line of every manifest
        return json.dumps(schema.document_schema(None), indent=2) + "\n"
    text = (resources.files("controller") / "data" / "init" / template).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def fleet_name_for(folder: Path) -> str:
    """A fleet name from the folder's name (`My Fleet` -> `my-fleet`), else `fleet`."""
    name = re.sub(r"[^a-z0-9_-]+", "-", folder.resolve().name.lower()).strip("-_")[:64]
    return name if name and not naming.profile_name_problem(name) else "fleet"


def hook_source(source: str | None, rev: str | None, checkout: Path | None = None) -> tuple[str, str, bool]:
    """The repository and revision the hook and the CI install point at: --source/--rev, else the git
    origin and commit of the hermes-fleet checkout this command runs from, else a placeholder."""
    checkout = checkout or Path(__file__).resolve().parents[2]
    head = origin = None
    if (checkout / ".pre-commit-hooks.yaml").is_file() and (checkout / ".git").exists():
        origin = _git(checkout, "remote", "get-url", "origin")
        head = _git(checkout, "rev-parse", "HEAD")
    if source:
        return source, rev or (head if source == origin else None) or UNPINNED_REV, True
    if origin and head:
        return origin, rev or head, True
    return PLACEHOLDER_SOURCE, rev or UNPINNED_REV, False


def pip_url(source: str) -> str | None:
    """`source` as the `git+` URL pip installs from, None for a place a CI runner cannot reach
    (a local path or file:// URL). An SSH origin in scp form (`git@host:org/repo.git`) becomes
    `git+ssh://git@host/org/repo.git`: pip does not take the scp form."""
    if source.startswith(("https://", "http://", "ssh://", "git://")):
        return f"git+{source}"
    match = _SCP_LIKE.match(source)
    if match and "/" not in match["host"]:
        return f"git+ssh://{match['user'] or ''}{match['host']}/{match['path']}"
    return None


def _git(folder: Path, *argv: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(folder), *argv], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None
