"""ProfileMeta: the hermes-bots ui_meta record, revisions, races, and the real Hermes 0.19 writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.adapters import fsio
from controller.adapters.profilemeta import ProfileMeta
from controller.errors import ConflictError, HermesStateError, RefusedValue
from tests.adapters.conftest import RealHermes

EXISTING = """\
description: Research bot
description_auto: false
previous_names:
  - oldbot
ui_meta:
  hermes-bots:
    title: Researcher
    color: '#8b5cf6'
    hidden: false
    desktopOnlyKey: keep-me-only-if-sent
  hermes-bots-groups:
    version: 3
    rooms: {}
  third-party:
    x: 1
_ui_meta_revisions:
  hermes-bots: 7
  hermes-bots-groups: 2
unknown_top: {a: [1, 2]}
"""


def _meta(tmp_path: Path, text: str = EXISTING) -> ProfileMeta:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return ProfileMeta.load(path)


def test_reads_fields(tmp_path: Path):
    meta = _meta(tmp_path)
    assert meta.description == "Research bot"
    assert meta.display_name is None
    assert meta.bot_record() == {
        "title": "Researcher",
        "color": "#8b5cf6",
        "hidden": False,
        "desktopOnlyKey": "keep-me-only-if-sent",
    }
    assert meta.revision() == 7
    assert meta.revision("hermes-bots-groups") == 2
    assert meta.revision("nobody") == 0


def test_set_bot_record_replaces_namespace_and_bumps_revision(tmp_path: Path):
    yaml = pytest.importorskip("yaml")
    meta = _meta(tmp_path)
    record = {"title": "Researcher", "color": None, "groups": ["lab"], "created": 1764460800000}
    assert meta.set_bot_record(record) is True
    meta.save()
    data = yaml.safe_load((tmp_path / "profile.yaml").read_text())
    assert data["ui_meta"]["hermes-bots"] == record
    assert data["_ui_meta_revisions"] == {"hermes-bots": 8, "hermes-bots-groups": 2}
    assert data["ui_meta"]["hermes-bots-groups"] == {"version": 3, "rooms": {}}
    assert data["ui_meta"]["third-party"] == {"x": 1}
    assert data["previous_names"] == ["oldbot"]
    assert data["unknown_top"] == {"a": [1, 2]}
    assert data["description"] == "Research bot"


def test_equal_record_changes_nothing(tmp_path: Path):
    meta = _meta(tmp_path)
    assert meta.set_bot_record(meta.bot_record() or {}) is False
    assert meta.revision() == 7
    assert meta.render() == EXISTING


@pytest.mark.parametrize("raw", ["true", "'7'", "1.5", "null", "[1]"])
def test_bad_revisions_count_as_zero(tmp_path: Path, raw: str):
    meta = _meta(tmp_path, f"_ui_meta_revisions:\n  hermes-bots: {raw}\n")
    assert meta.revision() == 0
    meta.set_bot_record({"title": "x"})
    assert meta.revision() == 1


def test_new_file_and_missing_file(tmp_path: Path):
    path = tmp_path / "profile.yaml"
    meta = ProfileMeta.load(path)
    assert not meta.exists and meta.bot_record() is None and meta.description is None
    meta.set_bot_record({"title": "New"})
    meta.description = "  Writes code  "
    meta.save()
    again = ProfileMeta.load(path)
    assert again.bot_record() == {"title": "New"}
    assert again.revision() == 1
    assert again.description == "Writes code"


def test_display_name_none_or_empty_removes_it(tmp_path: Path):
    meta = _meta(tmp_path)
    meta.display_name = "Dr. Research"
    assert meta.display_name == "Dr. Research"
    meta.display_name = None
    assert "display_name" not in meta.render()
    with pytest.raises(RefusedValue):
        meta.display_name = "x" * 65


def test_concurrent_change_is_a_conflict(tmp_path: Path):
    meta = _meta(tmp_path)
    meta.set_bot_record({"title": "Mine"})
    raced = EXISTING.replace("hermes-bots: 7", "hermes-bots: 8")
    (tmp_path / "profile.yaml").write_text(raced)
    with pytest.raises(ConflictError) as info:
        meta.save()
    assert info.value.exit_code == 3
    assert (tmp_path / "profile.yaml").read_text() == raced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.yaml"]
    assert fsio.WRITE_HOOKS == []


def test_change_landing_during_the_write_is_caught(tmp_path: Path):
    """The check runs at the pre-replace hook, after our temp file is written."""
    meta = _meta(tmp_path)
    meta.set_bot_record({"title": "Mine"})
    raced = EXISTING.replace("Research bot", "Changed by hermes profile describe")

    def sneak_in(path: Path) -> None:
        Path(path).write_text(raced)

    fsio.WRITE_HOOKS.append(sneak_in)
    try:
        with pytest.raises(ConflictError):
            meta.save()
    finally:
        fsio.WRITE_HOOKS.remove(sneak_in)
    assert (tmp_path / "profile.yaml").read_text() == raced


@pytest.mark.parametrize("text", ["a: [1\n", "- a\n"])
def test_unreadable_file_is_a_state_error(tmp_path: Path, text: str):
    with pytest.raises(HermesStateError, match=r"profile\.yaml"):
        _meta(tmp_path, text)


# --- the real Hermes ----------------------------------------------------------------------------

_READ_META = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from hermes_cli.profiles import read_profile_meta\n"
    "print(json.dumps(read_profile_meta(Path(sys.stdin.readline().strip()))))\n"
)


@pytest.mark.hermes
def test_hermes_writer_keeps_our_ui_meta(real_hermes: RealHermes):
    real_hermes.run("profile", "create", "metabot", "--no-alias", "--description", "Created by hermes")
    profile = real_hermes.root / "profiles" / "metabot"
    meta = ProfileMeta.load(profile / "profile.yaml")
    assert meta.description == "Created by hermes"
    record = {"title": "Meta Bot", "shape": "sigil-3", "groups": ["lab"], "sectionId": None, "pinned": True}
    meta.set_bot_record(record)
    meta.save()

    # 0.19's other profile.yaml writer: `profile describe --text` -> write_profile_meta().
    real_hermes.run("profile", "describe", "metabot", "--text", "Rewritten by hermes")
    after = ProfileMeta.load(profile / "profile.yaml")
    assert after.bot_record() == record
    assert after.revision() == 1
    assert after.description == "Rewritten by hermes"


@pytest.mark.hermes
def test_hermes_reads_our_description(real_hermes: RealHermes):
    profile = real_hermes.create_profile("descbot")
    meta = ProfileMeta.load(profile / "profile.yaml")
    meta.description = "Answers: questions # with a colon and hash"
    meta.set_bot_record({"title": "Desc"})
    meta.save()
    shown = real_hermes.run("profile", "describe", "descbot")
    assert "Answers: questions # with a colon and hash" in shown.stdout
    read = json.loads(real_hermes.python(_READ_META, profile, stdin=f"{profile}\n"))
    assert read == {"description": "Answers: questions # with a colon and hash", "description_auto": False}
