"""The typed codes (controller/codes.py, diagnostics.DiagnosticCode): every one has its exit code,
its metric label, its webhook event and its line in the docs, and a misspelt one is refused."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from controller import errors
from controller.codes import EventKind, FindingSeverity, HealthCode, Trigger, WatchResult
from controller.core import health
from controller.core import watching as policy
from controller.core.planning import rooms
from controller.core.types import GatewayView, Reason
from controller.diagnostics import DiagnosticCode
from controller.engine import metrics, watching
from controller.manifests.models import NOTIFICATION_EVENTS
from controller.verbs import watch

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_watch_result_has_an_exit_code() -> None:
    assert set(watch.ONCE_EXIT) == set(WatchResult)
    assert watch.ONCE_EXIT[WatchResult.DRIFT] == 0  # reported drift is a successful pass
    assert watch.ONCE_EXIT[WatchResult.STALLED] == 2


def test_a_misspelt_watch_result_is_refused_not_exit_0() -> None:
    with pytest.raises(ValueError):
        WatchResult("in_sync")
    run = watching.Run(at="", trigger="once", result="insync")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        watch.once_exit(run)


def test_every_watch_result_is_a_metric_label_and_is_documented() -> None:
    assert tuple(WatchResult) == policy.RESULTS
    text = (DOCS / "watch.md").read_text()
    assert [r for r in WatchResult if f"`{r.value}`" not in text] == []


def test_health_codes_are_one_list() -> None:
    assert tuple(HealthCode) == metrics.HEALTH_CODES
    events = set(NOTIFICATION_EVENTS)
    assert [c for c in HealthCode if c.value not in events] == []
    table = re.findall(r"^\| `([a-z-]+)` \|", health.__doc__ or "", re.M)
    assert table == [c.value for c in HealthCode]


def test_every_event_kind_can_be_subscribed_to_and_is_documented() -> None:
    assert set(NOTIFICATION_EVENTS) == {*EventKind, *HealthCode}
    text = (DOCS / "watch.md").read_text()
    assert [e for e in NOTIFICATION_EVENTS if f"`{e}`" not in text] == []


def test_diagnostic_codes_match_the_docs_table() -> None:
    text = (DOCS / "cli.md").read_text()
    section = text[text.index("## Diagnostic codes") : text.index("## CI")]
    documented = {c for row in section.splitlines() if row.startswith("| ") for c in re.findall(r"`([a-z_]+)`", row)}
    assert documented == set(typing.get_args(DiagnosticCode))


def test_gateway_errors_carry_a_typed_outcome() -> None:
    assert errors.GatewayUnavailable("x").outcome is errors.GatewayOutcome.TRANSIENT
    assert errors.GatewayAuthError("x").outcome is errors.GatewayOutcome.PERMANENT
    assert errors.GatewayOutcomeUnknown("x").outcome is errors.GatewayOutcome.UNKNOWN


@pytest.mark.parametrize(
    ("view", "code", "reason"),
    [
        (GatewayView(error="pending: gateway unreachable: no gateway"), Reason.GATEWAY_PENDING, "pending: gateway unreachable"),
        (
            GatewayView(error="gateway too old: update", error_code=Reason.GATEWAY_UNSUPPORTED),
            Reason.GATEWAY_UNSUPPORTED,
            "gateway too old",
        ),
        # a reason worded like another is still coded by what observing said, never by its text
        (
            GatewayView(error="pending-looking text", error_code=Reason.GATEWAY_UNSUPPORTED),
            Reason.GATEWAY_UNSUPPORTED,
            "pending-looking",
        ),
        (
            GatewayView(origin="ws://gw", capabilities={"methods": []}),
            Reason.GATEWAY_UNSUPPORTED,
            "pending: the gateway at ws://gw cannot",
        ),
    ],
)
def test_why_rooms_wait_is_typed(view: GatewayView, code: Reason, reason: str) -> None:
    problem = rooms.gateway_problem(view)
    assert problem is not None
    assert problem.code is code
    assert problem.reason.startswith(reason)


def test_triggers_and_severities_are_the_documented_words() -> None:
    """`Trigger` and `FindingSeverity` are Literal types mypy checks; their words are documented."""
    text = (DOCS / "watch.md").read_text()
    assert [t for t in typing.get_args(Trigger) if f"trigger={t}" not in text and f"`{t}`" not in text] == []
    assert typing.get_args(FindingSeverity) == ("error", "warning")
    assert {policy.next_trigger(woke=w, failures=f) for w in (True, False) for f in (0, 1)} <= set(typing.get_args(Trigger))
