"""Paths under the Hermes home are spelt in one place: `HomeLayout` (controller/adapters/home.py).

The scan reads every module's syntax tree. The names it looks for come from the layout itself, so
a name added there is covered here at once:
- a name with a dot or a slash (`config.yaml`, `cron/jobs.json`, `.hermes-fleet`) is refused as
  any string constant;
- a plain word (`profiles`, `cron`, `history`) is refused where it builds or tests a path: an
  operand of `/`, an argument of `Path()`/`os.path.join()`, or compared with a `.name`.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from controller.adapters import profiles
from controller.adapters.home import PROFILE_WRITTEN_DIRS, HomeLayout, ProfileLayout, StateLayout

REPO = Path(__file__).resolve().parents[2]
HOME_MODULE = Path("controller/adapters/home.py")
# Spellings that are no path under the home, each with its reason.
ALLOWED = {
    ("controller/core/health.py", "auth.json"): "a finding's label (where a credential was found); core reads no file",
    ("controller/core/handedits.py", "config.yaml"): "the hand-edit baseline's key for a file, and its label; core reads no file",
    ("controller/core/handedits.py", ".env"): "the hand-edit baseline's key for a file, and its label; core reads no file",
    (
        "controller/core/handedits.py",
        "profile.yaml",
    ): "the hand-edit baseline's key for a file, and its label; core reads no file",
}
PATH_CALLS = {"Path", "PurePath", "join"}


def _names() -> set[str]:
    out: set[str] = set()
    for cls in (HomeLayout, ProfileLayout, StateLayout):
        for key, value in vars(cls).items():
            if key.isupper():
                values = value if isinstance(value, tuple) else value.keys() if isinstance(value, dict) else (value,)
                out.update(v for v in values if isinstance(v, str) and v)
    return out | {part for name in out for part in name.split("/")}  # `cron/jobs.json`: `jobs.json` too


def _distinct(name: str) -> bool:
    return "." in name or "/" in name


def spelt(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each path under the home that `source` spells itself."""
    distinct = {n for n in names if _distinct(n)} | {ProfileLayout.avatar_name("")}
    words = {n for n in names if not _distinct(n)}
    found = []
    for node in ast.walk(ast.parse(source)):
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, str) and (value in distinct or value.startswith(("avatar.", ProfileLayout.avatar_name("")))):
            found.append((node.lineno, value))
        for operand in _path_operands(node):
            if isinstance(operand, ast.Constant) and operand.value in words:
                found.append((operand.lineno, operand.value))
    return sorted(set(found))


def _path_operands(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return list(node.args) if name in PATH_CALLS else []
    if isinstance(node, ast.Compare) and any(
        isinstance(s, ast.Attribute) and s.attr == "name" for s in [node.left, *node.comparators]
    ):
        return [node.left, *node.comparators]
    return []


def test_the_scan_finds_a_planted_literal() -> None:
    planted = 'from pathlib import Path\ndef f(root):\n    return root / "profiles" / "x" / "cron" / "jobs.json"\n'
    assert spelt(planted, _names()) == [(3, "cron"), (3, "jobs.json"), (3, "profiles")]
    assert spelt('x = f"assets/avatar.{ext}"\n', _names()) == [(1, "assets/avatar.")]
    assert spelt('if p.parent.name == "replaced": pass\n', _names()) == [(1, "replaced")]
    assert spelt('kind = "cron"\nlabel = {"history": 1}\n', _names()) == []  # a word, not a path


def test_no_module_but_home_spells_a_path_under_the_home() -> None:
    names = _names()
    assert {"config.yaml", ".env", "SOUL.md", "profile.yaml", "state.db", "cron/jobs.json", ".hermes-fleet"} <= names
    found = []
    for path in sorted((REPO / "controller").rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel == HOME_MODULE:
            continue
        for line, name in spelt(path.read_text(encoding="utf-8"), names):
            if (rel.as_posix(), name) not in ALLOWED:
                found.append(f"{rel}:{line}: {name!r} (use HomeLayout / ProfileLayout / StateLayout)")
    assert found == []


def test_every_state_folder_is_swept_or_said_not_to_be() -> None:
    """A folder added to `.hermes-fleet/` must say how deep the sweep looks in it (or that it is not ours)."""
    files = {StateLayout.APPLY_LOCK, StateLayout.WATCH_LOCK, StateLayout.WATCH_STATUS, StateLayout.SUSPENDED}
    files |= {StateLayout.PARSE_CACHE, StateLayout.OBSERVATION_CACHE, StateLayout.SETTLED_PLAN}
    files |= {StateLayout.BACKUP_META, StateLayout.BACKUP_TREE}  # inside one backup, not of the state folder
    folders = {v for k, v in vars(StateLayout).items() if k.isupper() and isinstance(v, str)} - files
    assert folders - set(StateLayout.SWEPT) == {StateLayout.GIT, StateLayout.DEMO}  # git's own files; the demo's manifests


def _dead_pid() -> int:
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def test_sweep_leftovers_enters_every_folder_the_layout_declares(tmp_path: Path) -> None:
    layout, dead = HomeLayout(tmp_path), _dead_pid()
    folders = [layout.profile(name) / rel for name in ("default", "alpha") for rel in PROFILE_WRITTEN_DIRS]
    for rel, depth in StateLayout.SWEPT.items():
        folders.append(layout.state / rel)
        if depth != "flat":
            folders.append(layout.state / rel / "one")
        if depth == "tree":
            folders.append(layout.state / rel / "one" / "two")
    leftovers = []
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        leftovers.append(folder / f"..env.hf{dead}.k2x9ab.tmp")
        leftovers[-1].write_text("half")
    removed = profiles.sweep_leftovers(tmp_path, ["alpha"])
    assert sorted(removed) == sorted(leftovers)
    assert not any(p.exists() for p in leftovers)


@pytest.mark.parametrize("name", ["default", "alpha"])
def test_profile_paths_follow_hermes(tmp_path: Path, name: str) -> None:
    """docs/hermes/home.md#layout: the default profile is the root; a named one is profiles/<name>."""
    folder = tmp_path if name == "default" else tmp_path / "profiles" / name
    files = HomeLayout(tmp_path).profile(name)
    assert files.path == folder
    assert (files.config, files.env, files.soul, files.meta) == tuple(
        folder / n for n in ("config.yaml", ".env", "SOUL.md", "profile.yaml")
    )
    assert files.jobs == folder / "cron" / "jobs.json"
    assert files.avatar("png") == folder / "assets" / "avatar.png"
