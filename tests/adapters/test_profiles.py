"""Unit tests for controller.adapters.profiles (no Hermes binary needed)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from controller.adapters import fsio, profiles
from controller.errors import ConflictError, ContainmentError, HermesStateError, UsageError

ENV_HEADER_LINES = [
    "# Per-profile secrets for this Hermes profile.",
    "# API keys and tokens set here override the shell environment.",
    "# Behavioral settings belong in config.yaml, not here.",
]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def no_write_hooks():
    saved = list(fsio.WRITE_HOOKS)
    yield fsio.WRITE_HOOKS
    fsio.WRITE_HOOKS[:] = saved


# --- live_profiles / tombstones ------------------------------------------------------------


def test_live_profiles_follows_hermes_019_rules(hermes_root: Path) -> None:
    base = hermes_root / "profiles"
    for name in ("alpha", "b-2", "c_3", "default", "Upper", ".alpha.staging-1", ".deleted", "-x"):
        (base / name).mkdir(parents=True)
    (base / "afile").write_text("x")
    (base / "gone").mkdir()
    (base / ".deleted" / "gone").write_text("deleted\n")
    assert profiles.live_profiles(hermes_root) == ["alpha", "b-2", "c_3"]
    assert profiles.is_tombstoned(hermes_root, "gone")
    assert not profiles.is_tombstoned(hermes_root, "alpha")


def test_live_profiles_without_profiles_dir(hermes_root: Path) -> None:
    assert profiles.live_profiles(hermes_root) == []
    assert not (hermes_root / "profiles").exists()


# --- create ----------------------------------------------------------------------------------


def test_create_makes_the_hermes_layout(hermes_root: Path, fake_home: Path) -> None:
    path = profiles.create_profile(hermes_root, "bot1")
    assert path == hermes_root / "profiles" / "bot1"
    assert sorted(p.name for p in path.iterdir()) == sorted([*profiles.PROFILE_DIRS, ".env"])
    for sub in profiles.PROFILE_DIRS:
        assert (path / sub).is_dir()
    env = path / ".env"
    assert env.read_text().splitlines() == ENV_HEADER_LINES
    assert mode(env) == 0o600
    # Hermes seeds SOUL.md itself; config.yaml appears on the first Hermes write.
    assert not (path / "SOUL.md").exists()
    assert not (path / "config.yaml").exists()
    assert not (path / profiles.NO_BUNDLED_SKILLS_MARKER).exists()
    # No wrapper script, and no staging directory left behind.
    assert not (fake_home / ".local").exists()
    assert sorted(p.name for p in (hermes_root / "profiles").iterdir()) == ["bot1"]
    assert profiles.live_profiles(hermes_root) == ["bot1"]


def test_create_empty_writes_the_no_skills_marker(hermes_root: Path) -> None:
    path = profiles.create_profile(hermes_root, "bare", create_empty=True)
    assert (path / profiles.NO_BUNDLED_SKILLS_MARKER).is_file()


@pytest.mark.parametrize("name", ["default", "Bad", "bad.name", "-x", "", "a" * 65, "hermes", "test", "sudo"])
def test_create_refuses_invalid_or_reserved_names(hermes_root: Path, name: str) -> None:
    with pytest.raises(UsageError):
        profiles.create_profile(hermes_root, name)
    assert not (hermes_root / "profiles").exists()


def test_create_refuses_existing_and_tombstoned(hermes_root: Path) -> None:
    profiles.create_profile(hermes_root, "bot1")
    (hermes_root / "profiles" / "bot1" / "keep").write_text("mine")
    with pytest.raises(ConflictError):
        profiles.create_profile(hermes_root, "bot1")
    assert (hermes_root / "profiles" / "bot1" / "keep").read_text() == "mine"

    (hermes_root / "profiles" / ".deleted").mkdir()
    (hermes_root / "profiles" / ".deleted" / "bot2").write_text("deleted\n")
    with pytest.raises(ConflictError, match="tombstone"):
        profiles.create_profile(hermes_root, "bot2")
    assert not (hermes_root / "profiles" / "bot2").exists()


def test_create_refuses_clone_plus_empty(hermes_root: Path) -> None:
    with pytest.raises(UsageError):
        profiles.create_profile(hermes_root, "bot1", clone_from="default", create_empty=True)


def test_failed_publish_leaves_nothing_behind(hermes_root: Path, no_write_hooks: list) -> None:
    target = hermes_root / "profiles" / "bot1"

    def boom(path: Path) -> None:
        if path == target:
            raise RuntimeError("crash before publish")

    no_write_hooks.append(boom)
    with pytest.raises(RuntimeError):
        profiles.create_profile(hermes_root, "bot1")
    assert sorted(os.listdir(hermes_root / "profiles")) == []


def test_concurrent_creator_wins_and_we_clean_up(hermes_root: Path, no_write_hooks: list) -> None:
    target = hermes_root / "profiles" / "bot1"

    def racer(path: Path) -> None:
        if path == target:  # someone else publishes first
            target.mkdir()
            (target / "theirs").write_text("x")

    no_write_hooks.append(racer)
    with pytest.raises(ConflictError):
        profiles.create_profile(hermes_root, "bot1")
    assert sorted(os.listdir(hermes_root / "profiles")) == ["bot1"]
    assert sorted(os.listdir(target)) == ["theirs"]


def test_stale_staging_of_ours_is_replaced(hermes_root: Path) -> None:
    stale = hermes_root / "profiles" / f".bot1.staging-{os.getpid()}"
    (stale / "junk").mkdir(parents=True)
    path = profiles.create_profile(hermes_root, "bot1")
    assert not stale.exists()
    assert not (path / "junk").exists()


# --- clone -----------------------------------------------------------------------------------

SOURCE_ENV = (
    "# my keys\n"
    "OPENAI_API_KEY=sk-model\n"
    "export FIRECRAWL_API_KEY=fc-tool\n"
    "TELEGRAM_BOT_TOKEN=111:tg\n"
    "TELEGRAM_ALLOWED_USERS=1\n"
    "DISCORD_BOT_TOKEN=dc\n"
    "WHATSAPP_ENABLED=true\n"
    "API_SERVER_KEY=0123456789abcdef0123\n"
    "GATEWAY_ALLOWED_USERS=2\n"
    "HASS_TOKEN=ha\n"
    "\n"
    "CUSTOM_THING=1\n"
)
SOURCE_CONFIG = """\
# top comment
model:
  provider: openrouter
  default: anthropic/claude-sonnet-4   # pinned
agent:
  max_turns: 11
platforms:
  telegram:
    enabled: true
    token: '111:tg'
telegram:
  reactions: true
discord:
  require_mention: false
gateway:
  multiplex_profiles: true
  profile_routes: [{profile: x, platform: telegram}]
  platform_connect_timeout: 45
"""


def make_source(folder: Path) -> None:
    (folder / "memories").mkdir(parents=True, exist_ok=True)
    (folder / "skills" / "cat" / "one").mkdir(parents=True)
    (folder / "config.yaml").write_text(SOURCE_CONFIG)
    env = folder / ".env"
    env.write_text(SOURCE_ENV)
    env.chmod(0o644)
    (folder / "SOUL.md").write_text("Be a fleet bot.\n")
    (folder / "memories" / "MEMORY.md").write_text("note\n§\nother\n")
    (folder / "memories" / "USER.md").write_text("user facts\n")
    (folder / "memories" / "other.md").write_text("not cloned\n")
    (folder / "skills" / "cat" / "one" / "SKILL.md").write_text("---\nname: one\n---\n")
    (folder / "skills" / ".bundled_manifest").write_text("one:abc\n")
    os.symlink("cat/one", folder / "skills" / "link")
    (folder / "state.db").write_text("not cloned")
    (folder / "cron").mkdir()
    (folder / "cron" / "jobs.json").write_text("{}")


def test_clone_from_default_copies_what_hermes_copies(hermes_root: Path) -> None:
    make_source(hermes_root)
    path = profiles.create_profile(hermes_root, "twin", clone_from="default")

    assert (path / "SOUL.md").read_text() == "Be a fleet bot.\n"
    assert (path / "memories" / "MEMORY.md").read_text() == "note\n§\nother\n"
    assert (path / "memories" / "USER.md").read_text() == "user facts\n"
    assert not (path / "memories" / "other.md").exists()
    assert (path / "skills" / "cat" / "one" / "SKILL.md").is_file()
    assert (path / "skills" / ".bundled_manifest").read_text() == "one:abc\n"
    assert os.readlink(path / "skills" / "link") == "cat/one"
    assert not (path / "state.db").exists()
    assert not (path / "cron" / "jobs.json").exists()
    for sub in profiles.PROFILE_DIRS:
        assert (path / sub).is_dir()
    # The source is untouched.
    assert (hermes_root / ".env").read_text() == SOURCE_ENV
    assert (hermes_root / "config.yaml").read_text() == SOURCE_CONFIG


def test_clone_strips_messaging_channels(hermes_root: Path) -> None:
    make_source(hermes_root)
    path = profiles.create_profile(hermes_root, "twin", clone_from="default")

    env = path / ".env"
    assert mode(env) == 0o600  # tightened, whatever the source mode
    assert env.read_text() == (
        "# my keys\nOPENAI_API_KEY=sk-model\nexport FIRECRAWL_API_KEY=fc-tool\nHASS_TOKEN=ha\n\nCUSTOM_THING=1\n"
    )
    config = (path / "config.yaml").read_text()
    for gone in ("platforms:", "telegram:", "discord:", "multiplex_profiles", "profile_routes", "111:tg"):
        assert gone not in config
    # Everything else survives, comments included (round-trip YAML).
    assert "# top comment" in config
    assert "# pinned" in config
    assert "max_turns: 11" in config
    assert "platform_connect_timeout: 45" in config


def test_clone_drops_shared_prefix_keys_only_when_that_platform_is_configured() -> None:
    text = "HASS_TOKEN=a\nEMAIL_PASSWORD=b\nTWILIO_AUTH_TOKEN=c\n"
    assert profiles.strip_channel_env(text) == text
    assert profiles.strip_channel_env(text, {"homeassistant", "email"}) == "TWILIO_AUTH_TOKEN=c\n"
    assert profiles.strip_channel_env(text, {"sms"}) == "HASS_TOKEN=a\nEMAIL_PASSWORD=b\n"


def test_clone_without_channels_copies_config_byte_for_byte(hermes_root: Path) -> None:
    src = profiles.create_profile(hermes_root, "src")
    text = "# keep me\nagent: {max_turns: 3}   # flow style\n"
    (src / "config.yaml").write_text(text)
    path = profiles.create_profile(hermes_root, "dst", clone_from="src")
    assert (path / "config.yaml").read_text() == text
    # A source without SOUL.md/memories gives a clone without them, plus our .env header.
    assert not (path / "SOUL.md").exists()
    assert (path / ".env").read_text().splitlines() == ENV_HEADER_LINES


def test_clone_refuses_unparseable_config(hermes_root: Path) -> None:
    (hermes_root / "config.yaml").write_text("platforms: [unclosed\n")
    with pytest.raises(HermesStateError):
        profiles.create_profile(hermes_root, "twin", clone_from="default")
    assert sorted(os.listdir(hermes_root / "profiles")) == []


def test_clone_from_missing_or_tombstoned_profile(hermes_root: Path) -> None:
    with pytest.raises(HermesStateError):
        profiles.create_profile(hermes_root, "twin", clone_from="nosuch")
    (hermes_root / "profiles" / "gone").mkdir(parents=True)
    (hermes_root / "profiles" / ".deleted").mkdir()
    (hermes_root / "profiles" / ".deleted" / "gone").write_text("deleted\n")
    with pytest.raises(HermesStateError):
        profiles.create_profile(hermes_root, "twin", clone_from="gone")
    assert not (hermes_root / "profiles" / "twin").exists()


# --- symlink safety --------------------------------------------------------------------------


def test_profile_symlink_outside_root_is_refused(hermes_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    (hermes_root / "profiles").mkdir()
    os.symlink(outside, hermes_root / "profiles" / "evil")

    with pytest.raises(ContainmentError):
        profiles.backup_profile(hermes_root, "evil", fleet="f")
    with pytest.raises(ContainmentError):
        profiles.create_profile(hermes_root, "evil")
    with pytest.raises(ContainmentError):
        profiles.create_profile(hermes_root, "twin", clone_from="evil")
    assert sorted(os.listdir(outside)) == ["precious"]
    assert os.path.islink(hermes_root / "profiles" / "evil")


def test_profiles_dir_symlink_outside_root_is_refused(hermes_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, hermes_root / "profiles")
    with pytest.raises(ContainmentError):
        profiles.create_profile(hermes_root, "bot1")
    with pytest.raises(ContainmentError):
        profiles.live_profiles(hermes_root)
    assert os.listdir(outside) == []


def test_a_profile_linked_to_another_profile_is_listed_but_never_written(hermes_root: Path) -> None:
    """Hermes lists a linked profile; hermes-fleet never backs it up or writes through it (containment)."""
    real = profiles.create_profile(hermes_root, "real")
    os.symlink(real, hermes_root / "profiles" / "alias")
    assert profiles.live_profiles(hermes_root) == ["alias", "real"]
    before = sorted(os.listdir(real))
    with pytest.raises(ContainmentError):
        profiles.backup_profile(hermes_root, "alias", fleet="f")
    assert sorted(os.listdir(real)) == before and os.path.islink(hermes_root / "profiles" / "alias")


# --- backup / restore ------------------------------------------------------------------------


def test_backup_moves_the_tree_and_records_it(hermes_root: Path) -> None:
    path = profiles.create_profile(hermes_root, "bot1")
    (path / "memories" / "MEMORY.md").write_text("remember")
    before = listing(path)

    backup = profiles.backup_profile(hermes_root, "bot1", fleet="prod")

    assert not path.exists()
    assert profiles.live_profiles(hermes_root) == []
    assert backup.parent == hermes_root / ".hermes-fleet" / "backups"
    assert backup.name.endswith("Z-bot1")
    assert listing(backup / "profile") == before
    meta = json.loads((backup / "BACKUP.json").read_text())
    assert meta["name"] == "bot1"
    assert meta["fleet"] == "prod"
    assert meta["original_path"] == str(path)
    assert meta["created_at"].endswith("Z")
    for folder in (hermes_root / ".hermes-fleet", backup.parent, backup):
        assert mode(folder) == 0o700

    [info] = profiles.list_backups(hermes_root)
    assert (info.path, info.name, info.fleet) == (backup, "bot1", "prod")


def test_restore_round_trip(hermes_root: Path) -> None:
    path = profiles.create_profile(hermes_root, "bot1")
    (path / "SOUL.md").write_text("me")
    before = listing(path)
    records = {"bot/bot1": {"applied": {"meta:title": "Bot One"}}}
    backup = profiles.backup_profile(hermes_root, "bot1", fleet="prod", records=records)

    restored = profiles.restore_profile(hermes_root, backup.name)

    assert (restored.name, restored.fleet, restored.records) == ("bot1", "prod", records)
    assert listing(path) == before
    assert (path / "SOUL.md").read_text() == "me"
    assert profiles.list_backups(hermes_root) == [], "a restored backup is no longer listed"
    profiles.discard_backup(restored)
    assert not backup.exists()


def test_restore_refuses_when_profile_exists(hermes_root: Path) -> None:
    profiles.create_profile(hermes_root, "bot1")
    backup = profiles.backup_profile(hermes_root, "bot1", fleet="prod")
    newer = profiles.create_profile(hermes_root, "bot1")
    (newer / "new").write_text("x")

    with pytest.raises(ConflictError):
        profiles.restore_profile(hermes_root, backup)
    assert (newer / "new").is_file()
    assert (backup / "profile").is_dir()
    assert len(profiles.list_backups(hermes_root)) == 1


def test_restore_refuses_paths_outside_backups(hermes_root: Path, tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    (fake / "profile").mkdir(parents=True)
    (fake / "BACKUP.json").write_text(json.dumps({"name": "bot1"}))
    with pytest.raises(HermesStateError):
        profiles.restore_profile(hermes_root, fake)
    assert (fake / "profile").is_dir()


def test_backup_refusals(hermes_root: Path) -> None:
    with pytest.raises(UsageError):
        profiles.backup_profile(hermes_root, "default", fleet="f")
    with pytest.raises(HermesStateError):
        profiles.backup_profile(hermes_root, "nosuch", fleet="f")
    assert sorted(os.listdir(hermes_root)) == []


def test_two_backups_in_one_second_do_not_collide(hermes_root: Path) -> None:
    profiles.create_profile(hermes_root, "bot1")
    first = profiles.backup_profile(hermes_root, "bot1", fleet="f")
    profiles.create_profile(hermes_root, "bot1")
    second = profiles.backup_profile(hermes_root, "bot1", fleet="f")
    assert first != second
    assert [b.path for b in profiles.list_backups(hermes_root)] == [first, second]


def test_list_backups_skips_incomplete_ones(hermes_root: Path) -> None:
    base = hermes_root / ".hermes-fleet" / "backups"
    (base / "20260101T000000Z-x").mkdir(parents=True)
    (base / "20260101T000000Z-x" / "BACKUP.json").write_text(json.dumps({"name": "x"}))  # no tree
    (base / "junk" / "profile").mkdir(parents=True)  # no record
    assert profiles.list_backups(hermes_root) == []


def test_failed_backup_move_keeps_the_profile(hermes_root: Path, no_write_hooks: list) -> None:
    path = profiles.create_profile(hermes_root, "bot1")

    def boom(target: Path) -> None:
        if target.name == "profile":
            raise OSError("disk on fire")

    no_write_hooks.append(boom)
    with pytest.raises(HermesStateError):
        profiles.backup_profile(hermes_root, "bot1", fleet="f")
    assert path.is_dir()
    assert os.listdir(hermes_root / ".hermes-fleet" / "backups") == []
