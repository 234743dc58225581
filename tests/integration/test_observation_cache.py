"""The observation cache (adapters/obscache.py): unchanged files are not read again, and nothing
else is trusted: a changed stat key, a racy timestamp (git's racy-clean rule), a cache of another
version, a corrupted or hostile cache, --no-cache. And in `watch`, a hand edit of one bot's
config.yaml is drift in the very next pass.

A "stale" cache below is the real cache file with one entry's stat key set to what the edited file
has now: exactly what the cache would hold had the edit fallen into the tick of the read. Whether
the plan then sees the edit shows which rule caught it."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import inventory as inventory_file
from controller.adapters import obscache
from controller.adapters.home import ProfileLayout
from controller.adapters.sources import LocalSource
from controller.engine import observecache, records
from controller.engine.watching import Log, Options, Reconciler
from tests.integration.helpers import apply, changes, plan, write_fleet

BOT = {"name": "alpha", "title": "One", "config": {"agent.max_turns": 12}}


@pytest.fixture
def applied(home: Path, manifests: Path) -> Path:
    manifest = write_fleet(manifests, [BOT])
    assert apply(manifest, home).code == 0
    assert obscache.cache_path(home).is_file()
    assert oct(obscache.cache_path(home).stat().st_mode & 0o777) == "0o600"
    return manifest


def edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    """A hand edit of the same length, with the mtime set back to what it was."""
    assert len(old) == len(new)
    before = path.stat()
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def cache_data(home: Path) -> dict[str, Any]:
    return json.loads(obscache.cache_path(home).read_text())


def write_cache(home: Path, data: Any, *, written_ns: int) -> None:
    path = obscache.cache_path(home)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    os.utime(path, ns=(written_ns, written_ns))


def stale_cache(home: Path, *, after_ns: int) -> dict[str, Any]:
    """The cache with alpha's profile unit keyed by its files as they are now (its facts the old
    ones), written `after_ns` after config.yaml's mtime."""
    data = cache_data(home)
    unit = "profile:alpha"
    keys = observecache.profile_keys(home / "profiles" / "alpha")
    assert keys is not None and unit in data["units"]
    data["units"][unit][0] = [list(k) if k else None for k in keys]
    config = home / "profiles" / "alpha" / "config.yaml"
    write_cache(home, data, written_ns=config.stat().st_mtime_ns + after_ns)
    return data


def drifted(manifest: Path, home: Path, *flags: str) -> bool:
    return "bot/alpha" in changes(manifest, home, *flags)


def test_an_unchanged_home_is_read_from_the_cache(applied: Path, home: Path) -> None:
    # Files written in the cache's own tick are racy and read again; a no-op apply a moment later
    # writes the cache when none is.
    time.sleep(2 * obscache.FINE_NS / 1e9)
    assert apply(applied, home).code == 0
    cache = obscache.ObservationCache.load(home)
    from controller.engine import observing

    live = observing.observe_profile(home, "alpha", cache=cache)
    assert cache.misses == 0 and cache.hits >= 3, (cache.hits, cache.misses)
    assert live.config is not None and live.config["agent"]["max_turns"] == 12
    assert plan(applied, home, "--detailed-exitcode").code == 0


def test_a_changed_key_is_read_again(applied: Path, home: Path) -> None:
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("max_turns: 12", "max_turns: 99"))
    assert drifted(applied, home)


def test_the_racy_rule_catches_an_edit_that_keeps_size_and_mtime(applied: Path, home: Path) -> None:
    config = home / "profiles" / "alpha" / "config.yaml"
    edit_keeping_size_and_mtime(config, "max_turns: 12", "max_turns: 13")
    keys = observecache.profile_keys(home / "profiles" / "alpha")
    assert keys is not None
    # The cache written 5 ms after the file: within the granularity, so the entry is racy and read.
    stale_cache(home, after_ns=5_000_000)
    assert obscache.racy(keys, config.stat().st_mtime_ns + 5_000_000)
    assert drifted(applied, home)
    # The same entry, in a cache written 10 s after the file (and after its ctime), is trusted:
    # the racy rule, and nothing else, is what caught the edit above.
    newest = max(config.stat().st_mtime_ns, config.stat().st_ctime_ns)
    data = cache_data(home)
    write_cache(home, data, written_ns=newest + 10_000_000_000)
    assert not obscache.racy(keys, newest + 10_000_000_000)
    assert not drifted(applied, home)
    assert drifted(applied, home, "--no-cache")  # --no-cache reads every file in full


def test_status_no_cache_reads_in_full(applied: Path, home: Path) -> None:
    config = home / "profiles" / "alpha" / "config.yaml"
    edit_keeping_size_and_mtime(config, "max_turns: 12", "max_turns: 13")
    stale_cache(home, after_ns=10_000_000_000 + abs(config.stat().st_ctime_ns - config.stat().st_mtime_ns))

    def status_drift(*flags: str) -> int:
        run = plan(applied, home)  # noqa: F841 (the plan writes nothing, the cache stays stale)
        from tests.integration.helpers import hermes_fleet

        done = hermes_fleet("status", "--home", home, "-o", "json", *flags)
        assert done.code == 0, done.text
        return int(done.json()["fleets"][0]["drifted"])

    assert status_drift() == 0  # the stale entry, trusted
    assert status_drift("--no-cache") == 1


@pytest.mark.parametrize(
    "spoil",
    [
        "another-version",
        "another-format",
        "not-json",
        "a-list",
        "keys-of-text",
        "facts-of-another-shape",
        "a-marker-of-another-bot",
        "too-big",
        "a-symlink",
    ],
)
def test_a_cache_of_another_version_or_spoiled_is_ignored(
    applied: Path, home: Path, spoil: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = home / "profiles" / "alpha" / "config.yaml"
    edit_keeping_size_and_mtime(config, "max_turns: 12", "max_turns: 13")
    far = 10_000_000_000 + abs(config.stat().st_ctime_ns - config.stat().st_mtime_ns)
    data = stale_cache(home, after_ns=far)
    assert not drifted(applied, home)  # as forged, the cache is trusted: each spoil below is what undoes it
    written = config.stat().st_mtime_ns + far
    entry = data["units"]["profile:alpha"]
    path = obscache.cache_path(home)
    if spoil == "another-version":
        data["hermes_fleet"] = "0.0.0-other"
    elif spoil == "another-format":
        data["version"] = obscache.VERSION + 1
    elif spoil == "a-list":
        data = [data]
    elif spoil == "keys-of-text":
        entry[0] = [[str(n) for n in k] if k else None for k in entry[0]]
    elif spoil == "facts-of-another-shape":
        entry[1]["config"] = "max_turns: 12"
    elif spoil == "a-marker-of-another-bot":
        entry[1]["marker"] = {**entry[1]["marker"], "profile": "beta"}
    if spoil == "not-json":
        write_cache(home, json.dumps(data)[:-7] + "\x00garbage", written_ns=written)
    elif spoil == "too-big":
        write_cache(home, data, written_ns=written)
        monkeypatch.setattr(obscache, "MAX_CACHE_BYTES", path.stat().st_size - 1)
    elif spoil == "a-symlink":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(data))
        os.utime(elsewhere, ns=(written, written))
        path.unlink()
        path.symlink_to(elsewhere)
    else:
        write_cache(home, data, written_ns=written)
    assert drifted(applied, home)


def test_the_cache_holds_no_secret(applied: Path, home: Path) -> None:
    # .env is read every time, never cached (it holds the bots' secrets).
    manifest = write_fleet(applied.parent, [{**BOT, "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}}}])
    assert apply(manifest, home).code == 0
    assert os.environ["OR_KEY"] in (home / "profiles" / "alpha" / ".env").read_text()
    assert os.environ["OR_KEY"] not in obscache.cache_path(home).read_text()


def test_a_token_pasted_into_a_description_is_not_cached(applied: Path, home: Path) -> None:
    """A key pasted into a profile's description (by hand, or by a bot) is no credential by its
    key's name, but token-shaped: the profile's unit is left out of the cache, read every time."""
    token = "sk-or-v1-" + "0123456789abcdef" * 4
    meta = home / "profiles" / "alpha" / "profile.yaml"
    meta.write_text(meta.read_text() + f"description: 'keep {token} safe'\n")
    assert apply(applied, home).code == 0
    assert token not in obscache.cache_path(home).read_text()
    assert token not in "".join(p.read_text() for p in (home / ".hermes-fleet" / "cache").iterdir())


def test_a_hand_edit_is_drift_in_the_next_watch_pass(home: Path, manifests: Path) -> None:
    write_fleet(manifests, [BOT, {"name": "beta", "title": "Two"}])
    reconciler = Reconciler(
        home, LocalSource([str(manifests)], recursive=False), Options(interval=60), Log("text", io.StringIO())
    )
    assert reconciler.reconcile("start").result == "applied"
    reconciler.observations.start(reconciler.stop)
    try:
        deadline = time.monotonic() + 20
        while not reconciler.observations._ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reconciler.observations._ready, "the file watcher did not start"
        for _ in range(2):  # the second pass takes unmarked profiles from memory, unstat'ed
            assert reconciler.reconcile("interval").result == "in-sync"
        assert reconciler.pass_cache.trusted
        config = home / "profiles" / "alpha" / "config.yaml"
        edit_keeping_size_and_mtime(config, "max_turns: 12", "max_turns: 13")
        time.sleep(0.5)  # the watcher's debounce and step; the pass does not wait for it
        run = reconciler.reconcile("interval")
        assert run.result == "drift" and run.drift == ["bot/alpha"], run
    finally:
        reconciler.stop.set()


def test_watch_reads_in_full_every_n_passes(home: Path, manifests: Path) -> None:
    write_fleet(manifests, [BOT])
    options = Options(interval=60, full_every=3)
    reconciler = Reconciler(home, LocalSource([str(manifests)], recursive=False), options, Log("text", io.StringIO()))
    uses = []
    for _ in range(6):
        reconciler.reconcile("interval")
        uses.append(reconciler.pass_cache.use)
    assert uses == [True, True, False, True, True, False]


def test_a_config_with_a_credential_is_not_cached(home: Path, manifests: Path) -> None:
    # A key that names a credential in config.yaml (a user's own `api_key`): never in a state file.
    token = "sk-handmade-SECRETVALUE-42"
    manifest = write_fleet(manifests, [BOT])
    assert apply(manifest, home).code == 0
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text() + f"custom_provider:\n  api_key: {token}\n")
    assert apply(manifest, home).code == 0
    assert token in config.read_text()
    text = obscache.cache_path(home).read_text()
    assert token not in text and "profile:alpha" not in text
    assert "jobs:alpha" in text or "fence:alpha" in text  # the rest of the cache is there


def test_a_symlink_put_in_after_the_cache_was_written_is_still_refused(applied: Path, home: Path, tmp_path: Path) -> None:
    # The containment check is skipped only for folders whose stat keys did not move: a link put in
    # changes its folder's listing, hence its key, and the check runs again (exit 3).
    time.sleep(2 * obscache.FINE_NS / 1e9)
    assert apply(applied, home).code == 0  # a settled cache: the fence unit of alpha is in it
    assert '"fence:alpha"' in obscache.cache_path(home).read_text()
    outside = tmp_path / "outside.yaml"
    config = home / "profiles" / "alpha" / "config.yaml"
    outside.write_text(config.read_text())
    config.unlink()
    config.symlink_to(outside)
    run = plan(applied, home)
    assert run.code == 3 and "leads to" in run.text, run.text


def test_a_marker_naming_another_profile_is_that_bots_error_with_the_cache_on(applied: Path, home: Path) -> None:
    """A cached profile must keep what decides ownership: a marker the bot wrote naming another
    profile is that bot's error (exit 1), never a conflict refusing everything (exit 3), with the
    cache as without it; the cache never decides a refusal."""
    marker = home / "profiles" / "alpha" / ".hermes-fleet-owner.json"
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "profile": "other"}))
    for run in (apply(applied, home), plan(applied, home), apply(applied, home), plan(applied, home, "--no-cache")):
        assert run.code == 1, run.text
        assert "names profile 'other'" in run.text and str(marker) in run.text, run.text


def test_watch_reads_in_full_with_no_cache_set(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(obscache.NO_CACHE_ENV, "1")
    observations = observecache.WatchObservations(home, full_every=10)
    for _ in range(3):
        cache = observations.begin_pass()
        assert cache.use is False
        observations.end_pass(cache)


def test_a_failed_baseline_write_keeps_the_history_entry(applied: Path, home: Path, manifests: Path) -> None:
    """The information-only writes after an apply (the observation cache, the hand-edit baseline)
    come after the history entry: their failure cannot cost the rollback point."""
    baseline = home / ".hermes-fleet" / "baseline"
    if baseline.is_dir():
        for f in baseline.iterdir():
            f.unlink()
        baseline.rmdir()
    baseline.write_text("not a folder")
    write_fleet(manifests, [{**BOT, "title": "Two"}])
    assert apply(applied, home).code == 1
    entries = sorted((home / ".hermes-fleet" / "history" / "acme").iterdir())
    assert len(entries) == 2, entries


def watching(home: Path, manifests: Path, bots: list[dict[str, Any]]) -> Reconciler:
    """A reconciler that applied `bots`, its file watcher up and two in-sync passes behind it (the
    second takes unmarked profiles as the first observed them, from memory)."""
    write_fleet(manifests, bots)
    reconciler = Reconciler(
        home, LocalSource([str(manifests)], recursive=False), Options(interval=60), Log("text", io.StringIO())
    )
    assert reconciler.reconcile("start").result == "applied"
    reconciler.observations.start(reconciler.stop)
    deadline = time.monotonic() + 20
    while not reconciler.observations._ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reconciler.observations._ready, "the file watcher did not start"
    for _ in range(2):
        assert reconciler.reconcile("interval").result == "in-sync"
    assert reconciler.pass_cache.trusted and ("alpha", True) in reconciler.pass_cache.live
    return reconciler


def test_a_hand_edit_of_env_is_drift_in_the_next_watch_pass(home: Path, manifests: Path) -> None:
    # The watch loop keeps each observed profile, .env values included, in memory (never in the
    # cache file); a file event on .env must drop it, or the edit would go unseen until a full pass.
    reconciler = watching(home, manifests, [{**BOT, "env": {"MODE": "fast"}}, {"name": "beta", "title": "Two"}])
    try:
        env = home / "profiles" / "alpha" / ".env"
        edit_keeping_size_and_mtime(env, "MODE=fast", "MODE=slow")
        time.sleep(0.5)  # the watcher's debounce and step
        run = reconciler.reconcile("interval")
        assert run.result == "drift" and run.drift == ["bot/alpha"], run
        assert "slow" not in obscache.cache_path(home).read_text()
    finally:
        reconciler.stop.set()


def test_a_kept_profile_is_dropped_on_a_full_pass(home: Path, manifests: Path) -> None:
    # The safety net: every --full-every passes nothing kept in memory is taken as it is.
    reconciler = watching(home, manifests, [BOT])
    try:
        kept = reconciler.pass_cache.live[("alpha", True)]
        reconciler.observations.passes = reconciler.options.full_every - 1  # the next pass is the full one
        assert reconciler.reconcile("interval").result == "in-sync"
        assert not reconciler.pass_cache.use
        assert reconciler.pass_cache.live[("alpha", True)] is not kept  # observed afresh
    finally:
        reconciler.stop.set()


def test_the_watch_loop_reads_the_inventory_again_when_its_file_changes(applied: Path, home: Path) -> None:
    memo = records.InventoryMemo()
    path = inventory_file.inventory_path(home, "acme")
    time.sleep(0.05)  # past the racy window of the apply's write
    first = memo.load(home, "acme")
    assert memo.load(home, "acme") is first  # unchanged: not read again
    data = json.loads(path.read_text())
    data["host"] = "office"
    path.write_text(json.dumps(data))  # a hand edit (another size, mtime and ctime)
    again = memo.load(home, "acme")
    assert again is not first and again.host == "office"
    assert memo.load(home, "acme") is not again  # just written (racy): read again until it settles


def test_the_watch_loop_validates_again_when_a_manifest_or_its_soul_file_changes(home: Path, manifests: Path) -> None:
    # The revision of `-f` covers the manifests' content, not the files they name: a soul_file
    # edit must reach the next pass as well.
    (manifests / "alpha.md").write_text("You are one.\n")
    write_fleet(manifests, [{**BOT, "soul_file": "alpha.md"}])
    reconciler = Reconciler(
        home, LocalSource([str(manifests)], recursive=False), Options(interval=60), Log("text", io.StringIO())
    )
    memo = reconciler.kept.manifests
    snap = reconciler.source.snapshot()
    time.sleep(0.05)  # past the racy window of the files just written
    first = memo.load(snap, fleet=None, skip=home)
    assert first.state is not None and first.state.bots["alpha"].soul == "You are one.\n"
    assert memo.load(reconciler.source.snapshot(), fleet=None, skip=home) is first  # nothing changed
    (manifests / "alpha.md").write_text("You are two.\n")
    again = memo.load(reconciler.source.snapshot(), fleet=None, skip=home)
    assert again is not first and again.state is not None and again.state.bots["alpha"].soul == "You are two.\n"
    write_fleet(manifests, [{**BOT, "title": "Uno", "soul_file": "alpha.md"}])
    third = memo.load(reconciler.source.snapshot(), fleet=None, skip=home)
    assert third.state is not None and third.state.bots["alpha"].title == "Uno"


def test_a_soul_file_edit_is_drift_in_the_next_watch_pass(home: Path, manifests: Path) -> None:
    (manifests / "alpha.md").write_text("You are one.\n")
    write_fleet(manifests, [{**BOT, "soul_file": "alpha.md"}])
    reconciler = Reconciler(
        home, LocalSource([str(manifests)], recursive=False), Options(interval=60), Log("text", io.StringIO())
    )
    assert reconciler.reconcile("start").result == "applied"
    time.sleep(0.05)
    assert reconciler.reconcile("interval").result == "in-sync"
    assert reconciler.reconcile("interval").result == "in-sync"
    (manifests / "alpha.md").write_text("You are two.\n")
    assert reconciler.reconcile("interval").result == "applied"
    assert (home / "profiles" / "alpha" / "SOUL.md").read_text() == "You are two.\n"


def test_the_last_no_op_plan_is_taken_again_until_an_input_changes(home: Path, manifests: Path) -> None:
    reconciler = watching(home, manifests, [BOT, {"name": "beta", "title": "Two"}])
    try:
        held = reconciler.kept.plans._held
        assert held is not None
        assert reconciler.reconcile("interval").result == "in-sync"
        assert reconciler.kept.plans._held is not None and reconciler.kept.plans._held[2] is held[2]  # not planned again
        edit_keeping_size_and_mtime(home / "profiles" / "alpha" / "config.yaml", "max_turns: 12", "max_turns: 13")
        time.sleep(0.5)  # the watcher's debounce and step
        run = reconciler.reconcile("interval")
        assert run.result == "drift" and run.drift == ["bot/alpha"], run
        assert reconciler.kept.plans._held is None  # a plan that changes something is never kept
    finally:
        reconciler.stop.set()


def test_a_bot_runtime_is_read_again_when_its_profile_changes(home: Path, manifests: Path) -> None:
    reconciler = watching(home, manifests, [BOT])
    try:
        _, before = reconciler.kept.runtimes["alpha"]
        assert before.heartbeat is None
        assert reconciler.reconcile("interval").result == "in-sync"
        assert reconciler.kept.runtimes["alpha"][1] is before  # kept: no event on its profile
        beat = time.time()
        (home / "profiles" / "alpha" / ProfileLayout.TICKER_HEARTBEAT).write_text(str(beat))  # as Hermes' ticker
        time.sleep(0.5)
        assert reconciler.reconcile("interval").result == "in-sync"
        assert reconciler.kept.runtimes["alpha"][1].heartbeat == beat
    finally:
        reconciler.stop.set()


def test_a_kept_profile_stays_in_the_cache_written_after_another_one_changed(home: Path, manifests: Path) -> None:
    reconciler = watching(home, manifests, [BOT, {"name": "beta", "title": "Two"}])
    try:
        (home / "profiles" / "beta" / "SOUL.md").write_text("hand edit\n")
        time.sleep(0.5)  # the watcher's debounce and step
        assert reconciler.reconcile("interval").result == "in-sync"  # beta read again: the cache is written
        units = cache_data(home)["units"]
        assert "profile:beta" in units and "profile:alpha" in units  # alpha was kept, not looked up
    finally:
        reconciler.stop.set()
