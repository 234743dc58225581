"""Plan insights end to end: real manifests, a real applied home, `plan` text and JSON, `--deny-widening`."""

from __future__ import annotations

from pathlib import Path

from tests.integration.helpers import Run, apply, plan, write_fleet


def team(**alpha: object) -> list[dict[str, object]]:
    return [
        {"name": "alpha", "title": "Alpha", "toolsets": ["web", "file"], **alpha},
        {"name": "beta", "title": "Beta", "toolsets": ["web"]},
    ]


def test_widening_is_summarised_and_denied(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, team()), home).code == 0
    widened = write_fleet(manifests, team(toolsets=["web", "file", "terminal"], config={"approvals": {"mode": "off"}}))

    text = plan(widened, home)
    assert text.code == 0, text.text
    assert "Capabilities: 2 widening" in text.out
    assert "bot/alpha toolsets: +terminal on every platform" in text.out
    assert "bot/alpha approvals: smart -> off" in text.out

    denied = plan(widened, home, "--deny-widening")
    assert denied.code == 5, denied.text
    assert "widening denied: bot/alpha toolsets: +terminal" in denied.err

    data = plan(widened, home, "-o", "json").json()
    caps = data["insights"]["capabilities"]
    assert data["insights"]["widening"] == 2
    assert {(c["what"], c["direction"]) for c in caps} == {("toolsets", "widening"), ("approvals", "widening")}

    # A narrowing change passes the gate (and --detailed-exitcode still reports pending changes).
    narrowed = write_fleet(manifests, team(toolsets=["web"]))
    gate = plan(narrowed, home, "--deny-widening", "--detailed-exitcode")
    assert gate.code == 4, gate.text
    assert "narrowing" in gate.out and "-file" in gate.out


def test_conflicts_win_over_the_widening_gate(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, team()), home).code == 0
    other = write_fleet(manifests / "other", team(toolsets=["terminal"]), fleet="other")
    run = plan(other, home, "--deny-widening")
    assert run.code == 3, run.text  # foreign owner: a conflict, not a widening verdict


def test_scheduled_runs_before_and_after(home: Path, manifests: Path) -> None:
    daily = {"name": "digest", "schedule": "0 8 * * *", "prompt": "Summarise"}
    assert apply(write_fleet(manifests, team(routines=[daily])), home).code == 0
    watchdog = {"name": "watchdog", "schedule": "every 1m", "script": "w.sh", "no_agent": True, "prompt": "x"}
    busy = write_fleet(manifests, team(routines=[{**daily, "schedule": "*/10 * * * *"}, watchdog]))
    data = plan(busy, home, "-o", "json").json()["insights"]["llm_runs_per_day"]
    assert (data["before"], data["after"]) == (1.0, 144.0)  # the script-only watchdog makes no model call
    assert data["routines"] == [{"routine": "alpha/digest", "before": 1.0, "after": 144.0}]
    assert "Scheduled LLM runs per day: 1 -> 144 (+143)" in plan(busy, home).out


def test_loop_risks_in_rooms_and_routines(home: Path, manifests: Path) -> None:
    bots = team(routines=[{"name": "ask", "schedule": "every 2h", "prompt": "Ask @beta for numbers"}])
    bots[1]["routines"] = [{"name": "answer", "schedule": "every 2h", "prompt": "Send @alpha the numbers"}]
    manifest = write_fleet(
        manifests,
        bots,
        rooms=[{"name": "Team", "members": ["alpha", "beta"]}],
        gateway={"bot_loop_guard": {"enabled": False}},
    )
    data = plan(manifest, home, "-o", "json", "--gateway", "ws://127.0.0.1:9/none").json()
    risks = {(r["kind"], r["subject"], r["severity"]) for r in data["insights"]["loop_risks"]}
    assert risks == {("room", "Team", "high"), ("routines", "alpha, beta", "high")}


def fleet_of(manifests: Path, toolsets: dict[str, list[str]], **alpha: object) -> Path:
    bots: list[dict[str, object]] = [{"name": n, "toolsets": t} for n, t in toolsets.items()]
    bots[0].update(alpha)
    return write_fleet(manifests, bots)


def denied_lines(run: Run) -> list[str]:
    return [line for line in run.err.splitlines() if line.startswith("hermes-fleet: widening denied: ")]


def test_deny_widening_says_one_line_per_kind(home: Path, manifests: Path) -> None:
    names = [f"b{i}" for i in range(6)]
    assert apply(fleet_of(manifests, {n: ["web"] for n in names}), home).code == 0
    widened = fleet_of(manifests, {n: ["web", "terminal"] for n in names}, config={"approvals": {"mode": "off"}})
    run = plan(widened, home, "--deny-widening")
    assert run.code == 5, run.text
    assert denied_lines(run) == [
        "hermes-fleet: widening denied: toolsets: +terminal on every platform, for 6 bots: b0, b1, b2 and 3 more",
        "hermes-fleet: widening denied: bot/b0 approvals: smart -> off",
    ]
    detail = plan(widened, home, "--deny-widening", "--detail")
    assert detail.code == 5 and len(denied_lines(detail)) == 7
    assert "hermes-fleet: widening denied: bot/b5 toolsets: +terminal on every platform" in detail.err
    data = plan(widened, home, "--deny-widening", "-o", "json")
    assert data.code == 5 and data.json()["insights"]["widening"] == 7  # JSON stays complete
    assert len(denied_lines(data)) == 2


def test_deny_widening_names_ten_kinds_then_counts(home: Path, manifests: Path) -> None:
    extra = ["terminal", "browser", "code_execution", "cronjob", "delegation", "file", "image_gen", "memory", "skills", "todo"]
    extra += ["tts", "vision"]
    assert apply(fleet_of(manifests, {f"b{i}": ["web"] for i in range(12)}), home).code == 0
    run = plan(fleet_of(manifests, {f"b{i}": ["web", t] for i, t in enumerate(extra)}), home, "--deny-widening")
    lines = denied_lines(run)
    assert run.code == 5 and len(lines) == 11, run.err
    assert lines[-1] == (
        "hermes-fleet: widening denied: ... and 2 more kind(s) of widening, on 2 bot(s) (--detail lists every change; "
        "-o json has them all)"
    )
