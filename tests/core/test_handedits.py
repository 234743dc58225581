"""core/handedits: which keys are recorded, and within what bounds (pure)."""

from __future__ import annotations

from controller.core import handedits

SALT = "s"


def test_a_managed_key_covers_its_subtree_and_the_keys_above_it_are_not_leaves() -> None:
    config = {"mcp_servers": {"github": {"command": "x"}, "mine": {"url": "u"}}, "agent": 5, "model": {"default": "m"}}
    managed = frozenset({"mcp_servers.github", "agent.max_turns"})
    got = handedits.config_digests(config, managed, SALT)
    # `agent` is a scalar where a managed key lives below it: that is the managed key's drift, not a hand edit.
    assert set(got) == {"mcp_servers.mine.url", "model.default"}


def test_digests_are_keyed_and_never_the_value() -> None:
    one = handedits.config_digests({"approvals": {"mode": "off"}}, frozenset(), SALT)
    other = handedits.config_digests({"approvals": {"mode": "off"}}, frozenset(), "another home")
    assert one != other and "off" not in one["approvals.mode"] and len(one["approvals.mode"]) == 12


def test_a_file_past_the_bound_is_one_digest() -> None:
    config = {f"k{i}": i for i in range(handedits.MAX_KEYS + 1)}
    assert list(handedits.config_digests(config, frozenset(), SALT)) == [handedits.WHOLE]
    env = {f"K{i}": "v" for i in range(handedits.MAX_KEYS + 1)}
    assert list(handedits.env_digests(env, frozenset(), SALT)) == [handedits.WHOLE]


def test_a_long_key_is_bounded() -> None:
    (key,) = handedits.config_digests({"x" * 5000: 1}, frozenset(), SALT)
    assert len(key) < handedits.MAX_KEY_CHARS + 20


def test_compare_names_added_removed_changed() -> None:
    edits = handedits.compare("config.yaml", {"a": "1", "b": "2"}, {"a": "9", "c": "3"})
    assert (edits.added, edits.removed, edits.changed) == (("c",), ("b",), ("a",)) and edits.count == 3


def test_profile_yaml_keys_the_fleet_manages() -> None:
    """engine/applying/bots.py _write_profile_yaml: a set description writes `description_auto`
    too; every bot's record `ui_meta.hermes-bots` is replaced whole, with its revision."""
    fields = ["config:agent.max_turns", "profile:description", "botmode", "meta:title"]
    managed = handedits.managed_keys(fields)[handedits.PROFILE]
    assert managed == {"description", "description_auto", "ui_meta.hermes-bots", "_ui_meta_revisions.hermes-bots"}
    data = {
        "description": "d",
        "description_auto": False,
        "display_name": "Al",
        "ui_meta": {"hermes-bots": {"title": "t"}, "desk": {"color": "teal"}},
        "_ui_meta_revisions": {"hermes-bots": 3, "desk": 1},
    }
    assert set(handedits.config_digests(data, managed, SALT)) == {"display_name", "ui_meta.desk.color", "_ui_meta_revisions.desk"}
    assert handedits.manages_profile_yaml(fields)
    assert not handedits.manages_profile_yaml(["config:agent.max_turns", "env:K"])  # the root's install-wide settings
