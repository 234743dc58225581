"""What a report-only pass of the reconciler says when its plan holds what apply would refuse or
fail on (controller/core/watching.py: unsettled). The rooms case runs end to end in
tests/integration/test_rooms.py::test_watch_converges_rooms_and_no_rooms_leaves_them_out."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from controller.core import watching
from controller.core.types import Action, Kind, ObjectChange, Plan, Reason


def planned(*changes: ObjectChange) -> SimpleNamespace:
    return SimpleNamespace(root=Path("."), plan=Plan("acme", "sha256:0", tuple(changes)))


SETTLED = ObjectChange(kind=Kind.BOT, name="alpha", action=Action.NOOP, code=Reason.MANAGED)
DRIFT = ObjectChange(kind=Kind.BOT, name="beta", action=Action.UPDATE, code=Reason.MANAGED, drift=True)
UNREACHABLE = ObjectChange(
    kind=Kind.ROOM,
    name="Ops",
    action=Action.ERROR,
    code=Reason.MANAGED,
    reason="pending: gateway unreachable (no gateway is running)",
)
TAKEN = ObjectChange(
    kind=Kind.BOT, name="gamma", action=Action.CONFLICT, code=Reason.FOREIGN_OWNER, reason="owned by fleet 'other'"
)


@pytest.mark.parametrize(
    ("changes", "result"),
    [
        ((SETTLED,), None),
        ((SETTLED, DRIFT), None),  # drift is reported as drift
        ((SETTLED, DRIFT, UNREACHABLE), "partial"),  # could not check the room: retried, never in-sync
        ((SETTLED, TAKEN), "conflict"),  # apply would refuse
        ((UNREACHABLE, TAKEN), "partial"),
    ],
)
def test_a_pass_that_could_not_check_everything_is_not_in_sync(changes: tuple[ObjectChange, ...], result: str | None) -> None:
    assert watching.unsettled(planned(*changes).plan) == result


def test_the_message_names_the_first_causes() -> None:
    message = watching.causes(planned(SETTLED, UNREACHABLE, TAKEN).plan, ["bot/delta: permission denied"])
    assert message == (
        "bot/delta: permission denied; room/Ops: pending: gateway unreachable (no gateway is running); "
        "bot/gamma: owned by fleet 'other'"
    )
