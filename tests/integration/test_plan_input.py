"""The plan's input is a value: planning twice from one `Inputs` gives one plan, and apply leaves
the `Inputs` as the plan read them (what apply does to the records goes to the engine's Ledger).

A real home: a fleet applied once, then changed so that the second apply writes every kind of
record (a bot updated, a bot renamed, a routine created and one deleted, a bot pruned).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from controller.core import planning
from controller.core.inventory import FrozenDict, Inventory
from controller.core.types import Options
from controller.engine import applying, reconciling, records
from controller.manifests import reading
from tests.integration.helpers import apply, write_fleet

DIGEST = {"name": "Digest", "schedule": "0 9 * * *", "prompt": "Summarize the news"}
SWEEP = {"name": "Sweep", "schedule": "every 2h", "prompt": "Sweep the inbox"}


def bot(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "soul": f"You are {name}.\n", "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}, **more}


def _state(path: Path) -> Any:
    result = reading.load_paths([str(path)], recursive=True, fleet=None)
    assert result.state is not None and not result.errors
    return result.state


def _as_json(inventory: Inventory) -> str:
    return json.dumps(inventory.to_json(), sort_keys=True)


@pytest.fixture
def changed(home: Path, manifests: Path) -> reconciling.Planned:
    first = [bot("alpha", routines=[DIGEST]), bot("beta"), bot("gamma", routines=[DIGEST])]
    assert apply(write_fleet(manifests, first), home).code == 0
    second = [
        bot("alpha", soul="You are Alpha, changed.\n", routines=[DIGEST, SWEEP]),
        bot("delta", renamed_from="beta"),
        bot("gamma"),
    ]
    path = write_fleet(manifests, second)
    return reconciling.plan_home(home, _state(path), [str(path)], options=Options(prune=True, yes=True))


def test_planning_twice_from_one_input_gives_one_plan(changed: reconciling.Planned) -> None:
    inputs = changed.inputs
    assert planning.plan(inputs) == planning.plan(inputs)
    assert {c.action.value for c in planning.plan(inputs).changes} >= {"update", "rename", "create", "delete"}


def test_apply_leaves_the_plan_input_as_it_was(home: Path, changed: reconciling.Planned) -> None:
    inputs = changed.inputs
    before, plan_before = _as_json(inputs.inventory), planning.plan(inputs)
    kept = copy.copy(inputs)
    ids = iter(f"{n:012x}" for n in range(1, 100))
    result = applying.apply_plan(home, changed.plan, inputs, new_job_id=lambda: next(ids))
    assert not result.failed
    reconciling.finish_inventory(home, changed, result)
    assert _as_json(inputs.inventory) == before  # every record as the plan read it
    assert inputs == kept
    assert planning.plan(inputs) == plan_before
    # ... while the ledger, and so the file, holds what apply did: the rename, the new job's id, the prune.
    saved = records.load(home, "acme")
    assert result.ledger is not None and _as_json(saved) == _as_json(result.ledger.inventory())
    assert "bot/delta" in saved.objects and "bot/beta" not in saved.objects
    assert saved.objects["routine/alpha/Sweep"]["job_id"] == "000000000001"
    assert "routine/gamma/Digest" not in saved.objects and "routine/gamma/Digest" in inputs.inventory.objects
    assert saved.last_apply is not None and saved.history[-1] == saved.last_apply


def test_the_plan_input_refuses_a_change(changed: reconciling.Planned) -> None:
    objects = changed.inputs.inventory.objects
    assert isinstance(objects, FrozenDict)
    with pytest.raises(TypeError):
        objects.pop("bot/alpha")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        objects["bot/alpha"]["applied"]["soul"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        objects["bot/alpha"].setdefault("job_id", "x")  # type: ignore[attr-defined]
