"""How much a text plan and apply show (docs/cli.md#plan-views): the full diff when it is
short, one line per object past DETAIL_LINES, one line per kind and action for a large apply,
`-q` for the summary, `--detail` for everything; `-o json` always complete.

Real files in temporary homes, the CLI in-process.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from controller import cli
from controller.verbs import reporting
from tests.integration.helpers import apply, plan, write_fleet


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def bots(count: int, toolsets: list[str], **extra: Any) -> list[dict[str, Any]]:
    return [{"name": f"bot{i}", "title": f"Bot {i}", "toolsets": toolsets, **extra} for i in range(count)]


def object_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:2] in ("+ ", "~ ", "- ", "! ", "> ")]


@pytest.mark.slow
def test_a_thousand_bot_first_apply_prints_at_most_40_lines_on_a_terminal(home: Path, manifests: Path) -> None:
    manifest = write_fleet(
        manifests,
        [dict(b, routines=[{"name": "r", "schedule": "every 2h", "prompt": "p"}]) for b in bots(1000, ["web"])],
    )
    out, err = Terminal(), Terminal()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--color", "never", "apply", "-f", str(manifest), "--home", str(home)])
    text = out.getvalue() + err.getvalue()
    assert code == 0, text
    assert text.count("\n") <= 40, text
    assert "+ 1,000 bot(s)  create" in out.getvalue() and "+ 1,000 routine(s)  create" in out.getvalue()
    assert "Apply complete: 2000 object(s) changed (1,000 bot(s) created, 1,000 routine(s) created)." in out.getvalue()
    assert "\rapplying " in err.getvalue()  # the progress line, rewritten in place (no newline)
    # The same in a CI log (no terminal): no progress, the same few lines, and the plan says so.
    run = plan(manifest, home, "--detailed-exitcode")
    assert run.code == 0 and run.text.count("\n") <= 10, run.text


def test_a_large_apply_groups_the_plan_and_lists_only_what_failed(home: Path, manifests: Path) -> None:
    fleet = bots(40, ["web"])
    fleet[7]["routines"] = [{"name": "r", "schedule": "every 2h", "prompt": "p", "workdir": "/no/such/dir"}]
    run = apply(write_fleet(manifests, fleet), home)
    assert run.code == 1, run.text
    assert "+ 40 bot(s)  create (profile does not exist): bot0, bot1, bot2 and 37 more · 26 field(s) each" in run.out
    assert "+ 1 routine(s)  create (new routine): bot7/r · 5 field(s)\n" in run.out
    assert "bot/bot3: created" not in run.out  # no line per converged object
    assert "routine/bot7/r: failed: routine 'r': workdir '/no/such/dir' is not an existing folder" in run.out
    assert "Apply finished with 1 failure(s), 40 object(s) converged (40 bot(s) created)." in run.out
    assert len(run.text.splitlines()) <= 30, run.text


def test_a_toolsets_change_is_one_line_per_bot_and_detail_gives_every_field(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, bots(3, ["web"])), home).code == 0
    manifest = write_fleet(manifests, bots(3, ["web", "terminal"]))
    compact = plan(manifest, home)
    assert compact.code == 0, compact.text
    lines = object_lines(compact.out)
    assert lines == [
        f"~ bot/bot{i}  update (managed by this fleet)  22 field(s): config:platform_toolsets.* (22)" for i in range(3)
    ], compact.out  # fmt: skip
    assert "platform_toolsets.telegram" not in compact.out
    detail = plan(manifest, home, "--detail")
    assert detail.out.count('platform_toolsets.telegram: ["web"] -> ["web", "terminal"]') == 3, detail.out
    assert len(object_lines(detail.out)) == 3 and len(detail.out.splitlines()) > 66
    quiet = plan(manifest, home, "-q", "--detailed-exitcode")
    assert quiet.code == 4
    assert quiet.out.splitlines()[0] == "Plan: 0 to create, 3 to update, 0 to adopt, 0 to delete."
    assert "bot/" not in quiet.out
    assert plan(manifest, home, "-q", "--detail").code == 2  # one view or the other


def test_a_short_plan_is_shown_whole(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, bots(2, ["web"])), home).code == 0
    manifest = write_fleet(manifests, [dict(b, config={"agent.max_turns": 30}) for b in bots(2, ["web"])])
    run = plan(manifest, home)
    assert "    + config:agent.max_turns = 30" in run.out, run.out


def test_json_stays_complete_whatever_the_view(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, bots(40, ["web"]))
    for flags in ((), ("-q",), ("--detail",)):
        data = plan(manifest, home, "-o", "json", *flags).json()
        created = [o for o in data["objects"] if o["action"] == "create"]
        assert len(created) == 40 and all(len(o["fields"]) == 26 for o in created)
    run = apply(manifest, home, "-o", "json", "-q")
    assert run.code == 0
    assert len(run.json()["results"]) == 40 and "Apply complete" not in run.out


def test_apply_quiet_prints_the_plan_summary_and_the_result(home: Path, manifests: Path) -> None:
    run = apply(write_fleet(manifests, bots(2, ["web"])), home, "-q")
    assert run.code == 0, run.text
    assert run.out.splitlines() == [
        "Plan: 2 to create, 0 to update, 0 to adopt, 0 to delete.",
        "Capabilities: 2 widening, 0 other change(s)",
        "Apply complete: 2 object(s) changed (2 bot(s) created).",
    ]


def test_field_summary_counts_a_family_of_keys_once() -> None:
    from controller.core.types import FieldChange, Op

    changes = tuple(FieldChange(field=f"config:platform_toolsets.p{i}", op=Op.ADD, old=None, new=["web"]) for i in range(5))
    changes += (
        FieldChange(field="meta:title", op=Op.CHANGE, old="a", new="b", drift=True),
        FieldChange(field="x.y", op=Op.ADD, old=None, new=1),
    )
    assert reporting.field_summary(changes) == "7 field(s): config:platform_toolsets.* (5), meta:title, x.y; 1 drifted"
    many = tuple(FieldChange(field=f"config:k{i}", op=Op.ADD, old=None, new=1) for i in range(40))
    text = reporting.field_summary(many)
    assert len(text) <= 90 and text.endswith(", ...")


def test_notes_past_the_limit_are_counted() -> None:
    from controller.core.types import Plan

    many = Plan(fleet="f", digest="sha256:0", changes=(), notes=tuple(f"n{i}" for i in range(9)))
    lines = list(reporting.plan_lines(many, home="/h", color=False, view=reporting.COMPACT))
    assert "note: n4" in lines and "note: n5" not in lines
    assert "... and 4 more note(s) (--detail or -o json shows all)" in lines
    assert "note: n8" in reporting.plan_text(many, home="/h", color=False)
