"""A hostile bot: one profile of a three-bot fleet holds files written to break the reader
(docs/reliability.md#home-files). That bot is one object in error, within seconds and within twice
the memory of a plan of the clean home; the other bots are planned and applied; SIGTERM ends
every verb within 5 s; nothing prints a traceback.

Every run is a real `hermes-fleet` process on a real home (built by hermes-fleet itself), its peak
memory taken from the kernel (`os.wait4`). The state.db cases are made with SQLite as a bot with a
terminal would make them.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability import scenario

pytestmark = [pytest.mark.slow]

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata:
  name: hostile
spec:
  bots:
{bots}
"""
BOT = """\
    - name: {name}
      title: {title}
      description: {description}
      model: {{provider: openrouter, default: anthropic/claude-sonnet-4}}
      soul: "You are {name}."
      routines:
        - {{name: Daily, schedule: "0 9 * * *", prompt: "hi"}}
"""
NAMES = ("one", "two", "three")
HOSTILE = "two"
SECONDS = 20  # "within seconds" on a shared 2-core machine; each case takes 1-4 s alone


def fleet(folder: Path, version: int) -> Path:
    bots = "".join(BOT.format(name=n, title=n.title(), description=f"{n}, version {version}") for n in NAMES)
    path = folder / f"fleet-v{version}.yaml"
    path.write_text(FLEET.format(bots=bots), encoding="utf-8")
    return path


# --- the hostile files ---------------------------------------------------------------------------

# 600 bytes that expand to 9^9 (387 million) values: what Hermes' own loader reads in 2 ms (PyYAML
# builds aliases as shared references) and a tree walk expands.
ALIAS_BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def plant_sized(path: Path, size: int) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("junk:\n")
        handle.truncate(size)  # the bytes past the text read as NULs: size is what is bounded


def plant_trigger(profile: Path) -> None:
    """Remove the Bot Chat (so apply writes one) and plant a trigger that would spin for hours
    inside that write (a recursive query of 10^11 rows)."""
    with sqlite3.connect(profile / "state.db") as conn:
        conn.execute("DELETE FROM sessions")
        conn.execute("CREATE TABLE spin (x)")
        conn.execute(
            "CREATE TRIGGER spin_on_insert AFTER INSERT ON sessions BEGIN INSERT INTO spin SELECT max(i) FROM "
            "(WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 100000000000) SELECT i FROM r); END"
        )
    conn.close()


def plant_spinning_view(profile: Path) -> None:
    """`sessions` replaced by a view whose every read spins (the lookup's own query)."""
    with sqlite3.connect(profile / "state.db") as conn:
        conn.execute("DROP TABLE sessions")
        conn.execute(
            "CREATE VIEW sessions AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 100000000000) "
            "SELECT 'x' AS id, 'cli' AS source, 'Bot Chat' AS title, 0 AS archived FROM r WHERE i < 0"
        )
    conn.close()


def plant_huge_row(profile: Path) -> None:
    """A 200 MB system prompt in the Bot Chat row (read as a whole by `SELECT *`)."""
    with sqlite3.connect(profile / "state.db") as conn:
        conn.execute("UPDATE sessions SET system_prompt = zeroblob(200000000) WHERE title = 'Bot Chat'")
    conn.close()


def plant_jobs(profile: Path, mutate: Callable[[str], str]) -> None:
    path = profile / "cron" / "jobs.json"
    path.write_text(mutate(path.read_text(encoding="utf-8")), encoding="utf-8")


CASES: dict[str, Callable[[Path], None]] = {
    "alias bomb in config.yaml": lambda p: append(p / "config.yaml", ALIAS_BOMB),
    "alias bomb in profile.yaml": lambda p: append(p / "profile.yaml", ALIAS_BOMB),
    "60 MB config.yaml": lambda p: plant_sized(p / "config.yaml", 60_000_000),
    "60 MB jobs.json": lambda p: plant_sized(p / "cron" / "jobs.json", 60_000_000),
    "30,000-deep config.yaml": lambda p: append(p / "config.yaml", "deep: " + "[" * 30_000 + "]" * 30_000 + "\n"),
    "30,000-deep owner marker": lambda p: (p / ".hermes-fleet-owner.json").write_text("[" * 30_000 + "]" * 30_000),
    "30,000-deep jobs.json": lambda p: plant_jobs(p, lambda t: '{"jobs": [' + "[" * 30_000 + "]" * 30_000 + "]}"),
    "5,000-digit integer in config.yaml": lambda p: append(p / "config.yaml", "n: " + "9" * 5000 + "\n"),
    "5,000-digit integer in profile.yaml": lambda p: append(p / "profile.yaml", "n: " + "9" * 5000 + "\n"),
    "5,000-digit integer in jobs.json": lambda p: plant_jobs(
        p, lambda t: t.replace('"jobs": [', '"n": ' + "9" * 5000 + ', "jobs": [', 1)
    ),
    "wrong types in jobs.json": lambda p: plant_jobs(p, lambda t: '{"jobs": [{"id": 5, "name": ["x"], "schedule": 3}]}'),
    "owner marker naming another fleet": lambda p: (p / ".hermes-fleet-owner.json").write_text(
        '{"fleet": "elsewhere", "profile": "two"}'
    ),
    "owner marker naming another profile": lambda p: (p / ".hermes-fleet-owner.json").write_text(
        '{"fleet": "hostile", "profile": "one"}'
    ),
    "state.db trigger on sessions": plant_trigger,
    "state.db spinning view": plant_spinning_view,
    "state.db 200 MB row": plant_huge_row,
}
# Cases where nothing is wrong enough to refuse: the bot is planned as usual (jobs of a wrong shape
# are not ours; a marker that does not parse is no marker; the huge column is never read).
NOT_AN_ERROR = {"wrong types in jobs.json", "30,000-deep owner marker", "state.db 200 MB row"}


# --- running hermes-fleet ----------------------------------------------------------------------


class Ran:
    def __init__(self, code: int, out: str, err: str, seconds: float, peak_kib: int) -> None:
        self.code, self.out, self.err, self.seconds, self.peak_kib = code, out, err, seconds, peak_kib


# The child's peak RSS is taken by a small launcher process: a child forked from pytest itself would
# report pytest's own peak (Linux keeps the larger of the two across exec: fs/exec.c, exec_mmap).
LAUNCHER = """
import os, signal, subprocess, sys
peak_file, argv = sys.argv[1], sys.argv[2:]
child = subprocess.Popen(argv)
signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
while True:
    try:
        _, status, usage = os.wait4(child.pid, 0)
        break
    except InterruptedError:
        continue
with open(peak_file, "w") as handle:
    handle.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run(args: list[str | Path], env: dict[str, str], *, term_after: float | None = None, term_once: str = "") -> Ran:
    """`hermes-fleet <args>` in its own process, with its peak RSS (KiB, from the kernel); SIGTERM
    `term_after` seconds after start (or after `term_once` appears in its output)."""
    scratch = Path(env["HOME"])
    out_path, err_path, peak_path = scratch / "out.txt", scratch / "err.txt", scratch / "peak.txt"
    command = [sys.executable, "-c", LAUNCHER, str(peak_path), sys.executable, "-m", "controller", *map(str, args)]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        if term_after is not None:
            while term_once and term_once not in out_path.read_text() and time.monotonic() < started + SECONDS:
                time.sleep(0.05)
            time.sleep(term_after)
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic() - term_after
        try:
            proc.wait(timeout=(term_after + 5 if term_after is not None else SECONDS) + 1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"hermes-fleet {args[0]} still running after {time.monotonic() - started:.1f} s")
        seconds = time.monotonic() - started
    return Ran(proc.returncode, out_path.read_text(), err_path.read_text(), seconds, int(peak_path.read_text()))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("hostile-home")
    user = base / "user"
    user.mkdir()
    env = scenario.environ(user)
    env["HERMES_FLEET_HERMES_VERSION"] = "0.19.0"
    v1, v2 = fleet(base, 1), fleet(base, 2)
    home = base / "home"
    home.mkdir()
    first = run(["apply", "-f", v1, "--home", home, "--adopt"], env)
    assert first.code == 0, first.out + first.err
    clean = [run(["plan", "-f", v2, "--home", home, "-o", "json"], env) for _ in range(2)]
    return {"home": home, "env": env, "v2": v2, "baseline_kib": min(r.peak_kib for r in clean)}


@pytest.fixture
def hostile(world: dict[str, object], tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, Path]:
    """(the case, a copy of the applied home with that case planted in bot `two`)."""
    home = tmp_path / "home"
    shutil.copytree(world["home"], home, symlinks=True)  # type: ignore[arg-type]
    CASES[request.param](home / "profiles" / HOSTILE)
    return request.param, home


def objects(ran: Ran) -> dict[str, dict[str, object]]:
    return {f"{o['kind']}/{o['name']}": o for o in json.loads(ran.out)["objects"]}


def no_traceback(ran: Ran) -> None:
    assert "Traceback" not in ran.out + ran.err, ran.err[-3000:]


# --- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("hostile", list(CASES), indirect=True)
def test_one_hostile_bot_is_one_error_and_the_others_are_applied(hostile: tuple[str, Path], world: dict[str, object]) -> None:
    case, hostile_home = hostile
    env, v2 = world["env"], world["v2"]
    limit = 2 * int(world["baseline_kib"])  # type: ignore[call-overload]

    plan = run(["plan", "-f", v2, "--home", hostile_home, "-o", "json"], env)  # type: ignore[list-item]
    no_traceback(plan)
    assert plan.seconds < SECONDS
    assert plan.peak_kib <= limit, f"plan peaked at {plan.peak_kib} KiB, over twice a clean plan ({limit // 2} KiB)"
    planned = objects(plan)
    for name in NAMES:
        if name != HOSTILE:
            assert planned[f"bot/{name}"]["action"] == "update", planned[f"bot/{name}"]
    expected_error = case not in NOT_AN_ERROR
    if expected_error and case != "state.db trigger on sessions":  # (a write refused at apply)
        # A cron store that cannot be read fails the bot's routines (the bot itself is planned).
        refused = planned[f"routine/{HOSTILE}/Daily" if "jobs.json" in case else f"bot/{HOSTILE}"]
        assert refused["action"] == "error", refused
        assert str(hostile_home / "profiles" / HOSTILE) in str(refused["reason"])  # the file is named

    applied = run(["apply", "-f", v2, "--home", hostile_home], env)  # type: ignore[list-item]
    no_traceback(applied)
    assert applied.seconds < SECONDS
    assert applied.peak_kib <= limit
    for name in NAMES:
        description = (hostile_home / "profiles" / name / "profile.yaml").read_text(encoding="utf-8", errors="replace")
        if name != HOSTILE:
            assert f"{name}, version 2" in description, f"bot {name} was not applied: {applied.out}{applied.err}"
    if expected_error:
        assert applied.code == 1
        assert f"/{HOSTILE}" in applied.out + applied.err

    status = run(["status", "-f", v2, "--home", hostile_home], env)  # type: ignore[list-item]
    no_traceback(status)
    assert status.seconds < SECONDS
    exported = run(["export", "--home", hostile_home, "--fleet", "hostile"], env)  # type: ignore[list-item]
    no_traceback(exported)
    assert exported.seconds < SECONDS


@pytest.mark.parametrize(
    "hostile", ["alias bomb in config.yaml", "state.db trigger on sessions", "state.db spinning view"], indirect=True
)
@pytest.mark.parametrize("verb", ["plan", "apply", "status"])
def test_sigterm_ends_the_verb_within_5_seconds(hostile: tuple[str, Path], world: dict[str, object], verb: str) -> None:
    ran = run([verb, "-f", world["v2"], "--home", hostile[1]], world["env"], term_after=1.0)  # type: ignore[list-item]
    no_traceback(ran)
    assert ran.seconds < 1.0 + 5.0
    assert ran.code in (0, 1, 143), ran.err  # finished first, or interrupted by the SIGTERM


# --- the reconciler -------------------------------------------------------------------------------

SLOW_SECRET = """\
    - name: slow
      env:
        TOKEN: {from_command: [sh, -c, "sleep 20; echo late"], timeout: 60}
"""


def test_sigterm_ends_watch_within_5_seconds_in_the_middle_of_a_pass(world: dict[str, object], tmp_path: Path) -> None:
    """A pass held up (here by a slow secret command) no longer holds the reconciler: SIGTERM
    interrupts the pass (after 3 s of grace) the way it interrupts `apply`, and the command is killed."""
    home = tmp_path / "home"
    shutil.copytree(world["home"], home, symlinks=True)  # type: ignore[arg-type]
    manifest = tmp_path / "fleet.yaml"
    manifest.write_text(Path(world["v2"]).read_text(encoding="utf-8") + SLOW_SECRET, encoding="utf-8")  # type: ignore[arg-type]
    args = ["watch", "-f", manifest, "--home", home, "--interval", "300"]
    ran = run(args, world["env"], term_after=1.0, term_once="started")  # type: ignore[arg-type]
    no_traceback(ran)
    assert ran.seconds < 1.0 + 5.0  # from the SIGTERM
    assert ran.code == 143, ran.out + ran.err
    assert "stopping signal=SIGTERM" in ran.out + ran.err
    assert not (home / ".hermes-fleet" / "apply.lock").exists() or not _lock_held(home)


def _lock_held(home: Path) -> bool:
    import fcntl

    with (home / ".hermes-fleet" / "apply.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def test_healthz_is_unhealthy_while_a_pass_overruns_its_deadline(world: dict[str, object], tmp_path: Path) -> None:
    import http.client
    import io

    from controller.adapters.sources import LocalSource
    from controller.engine import healthserver, watching

    options = watching.Options(interval=60, pass_deadline=30.0)
    reconciler = watching.Reconciler(
        tmp_path, LocalSource([str(world["v2"])], recursive=False), options, watching.Log("text", io.StringIO())
    )
    server = healthserver.start_health(0, reconciler, watching.Log("text", io.StringIO()))
    try:

        def healthz() -> tuple[int, dict[str, object]]:
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
            try:
                conn.request("GET", "/healthz")
                response = conn.getresponse()
                return response.status, json.loads(response.read())
            finally:
                conn.close()

        assert healthz() == (200, {"status": "ok", "last_result": "starting"})
        reconciler.pass_started = time.monotonic() - 10  # a pass 10 s in: within its 30 s
        assert healthz()[0] == 200
        reconciler.pass_started = time.monotonic() - 45  # 15 s past the deadline
        code, body = healthz()
        assert code == 503 and body["status"] == "unhealthy" and 14 <= float(body["overrun_seconds"]) <= 20  # type: ignore[arg-type]
        reconciler.pass_started = None  # the pass ended
        assert healthz()[0] == 200
    finally:
        server.shutdown()
        server.server_close()
