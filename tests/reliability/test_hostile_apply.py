"""Hostile manifests, fuzzed, against populated homes: `apply` exits 2 with a located error, prints no
traceback and writes nothing (the tree stays byte-identical; no `.hermes-fleet/` appears).

Examples start from the realistic v2 fleet (scenario.py) and break it in one or more places:
an unknown key with a random structure, a known field set to a wrong type or an invalid value
(names, schedules, paths leaving the manifest folder, denied env names, undeclared sections,
oversized titles), or the file cut short. Homes: one that only real Hermes wrote (no fleet state
yet) and one holding fleet v1. tests/property/test_hostile_manifests.py covers `validate`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.helpers import hermes_fleet, snapshot
from tests.reliability import scenario
from tests.reliability.conftest import Pristine

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

EXAMPLES = 200
BAD_VALUES: dict[str, list[Any]] = {
    "name": ["", "Bad Name", "../escape", "default/x", 7, None, ["a"], "x" * 80, "hermes"],
    "title": [5, {"a": 1}, "t" * 65, ["x"]],
    "schedule": ["every 0m", "61 * * * *", "", 3, "@sometimes", "0 0 31 2 *x"],
    "prompt": [{"x": 1}, 4],
    "soul_file": ["../../../etc/passwd", "/etc/passwd", "missing-soul.md", 1],
    "section": ["Undeclared", 3],
    # (A from_file secret is read on the applying machine, not validated: tests/integration/
    # test_converge_files.py covers an unstorable one, which fails its bot before any write.)
    "env": [{"LD_PRELOAD": "x"}, {"1BAD": "x"}, {"K": {"from_env": 5}}, "notamap", {"K": {"from_file": 5}}],
    "avatar": [{"image": "missing.png"}, {"image": "../../x.png"}, {"kind": "geometric"}, {"shape": "star"}, 3],
    "url": ["ftp://x", "not a url", 5],
    "config": ["notamap", [1, 2], {"": 1}],
    "model": ["x", {}, {"provider": 5}],
    "routines": [{"name": "x"}, "x", [{"schedule": "every 1h"}]],
}
# A routine's name is free text and its model a plain string: only these values are wrong there.
ROUTINE_BAD_VALUES: dict[str, list[Any]] = {
    "name": ["", 7, None, ["a"], "x" * 201, "two\nlines"],
    "schedule": BAD_VALUES["schedule"],
    "prompt": BAD_VALUES["prompt"],
    "model": ["", {}, 5, ["m"]],
    "paused": ["sometimes", {"a": 1}],
    "repeat": [0, -1, "twice"],
}
scalars = st.one_of(
    st.integers(-3, 99), st.booleans(), st.none(), st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False)
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3)),
    max_leaves=8,
)


def targets(doc: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, list[Any]]]]:
    """Every mapping of the manifest a mutation may hit, with the values that are wrong there."""
    spec = doc["spec"]
    found = [(spec, BAD_VALUES), (spec["gateway"], BAD_VALUES), (spec["peers"][0], BAD_VALUES), (spec["sections"][0], BAD_VALUES)]
    for bot in spec["bots"]:
        found.append((bot, BAD_VALUES))
        routines = bot.get("routines")
        if isinstance(routines, list):  # an earlier mutation may have replaced the list
            found.extend((r, ROUTINE_BAD_VALUES) for r in routines if isinstance(r, dict))
    return found


@st.composite
def hostile(draw: st.DrawFn, base: str) -> tuple[str, bool]:
    """(manifest text, whether a line:column location must be reported)."""
    if draw(st.integers(0, 9)) == 0:  # the file cut short somewhere
        return base[: draw(st.integers(1, len(base) - 2))], False
    doc = json.loads(base)
    for _ in range(draw(st.integers(1, 3))):
        where, bad = draw(st.sampled_from(targets(doc)))
        if draw(st.booleans()):
            key = draw(st.sampled_from(sorted(bad)))
            where[key] = draw(st.sampled_from(bad[key]))
        else:
            where["x_" + draw(st.text("abcdefghij_", min_size=1, max_size=6))] = draw(structures)
    return json.dumps(doc, indent=2), True


@pytest.fixture(scope="module")
def homes(pristine: Pristine, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("hostile-homes")
    return [scenario.copy_home(pristine.base_root, base / "hermes-only"), scenario.copy_home(pristine.root, base / "fleet-v1")]


def test_hostile_manifests_never_write(
    pristine: Pristine, homes: list[Path], tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in pristine.env.items():
        monkeypatch.setenv(key, value)
    base = pristine.v2.read_text(encoding="utf-8")
    folder = tmp_path_factory.mktemp("hostile")
    for extra in ("alpha-soul.md", "avatar.png"):
        (folder / extra).write_bytes((pristine.v2.parent / extra).read_bytes())
    before = [snapshot(h) for h in homes]
    assert not (homes[0] / ".hermes-fleet").exists()
    seen = {"examples": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(case=hostile(base), which=st.integers(0, 1), flags=st.sampled_from([(), ("--adopt",), ("--prune", "--yes")]))
    def check(case: tuple[str, bool], which: int, flags: tuple[str, ...]) -> None:
        text, located = case
        path = folder / "fleet.yaml"
        path.write_text(text, encoding="utf-8")
        run = hermes_fleet("apply", "-f", path, "--home", homes[which], *flags)
        seen["examples"] += 1
        assert run.code == 2, f"exit {run.code}\n{text}\n{run.text}"
        assert "Traceback" not in run.text
        pattern = re.compile(
            rf"^{re.escape(str(path))}:\d+:\d+: error: " if located else rf"^{re.escape(str(path))}(:\d+:\d+)?: error: ", re.M
        )
        assert pattern.search(run.text), run.text
        assert "nothing was changed" in run.text
        assert snapshot(homes[which]) == before[which], "an invalid manifest changed the home"

    check()
    assert seen["examples"] >= EXAMPLES // 2
    assert not (homes[0] / ".hermes-fleet").exists()
