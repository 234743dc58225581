"""One repository, several machines: `host:` on bots, rooms and peers, and `--host` slices."""

from __future__ import annotations

import textwrap

from tests.integration.helpers import hermes_fleet, plan_json

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: hosts}
spec:
  bots:
    - {name: a, host: alpha}
    - {name: b, host: beta}
    - {name: c}
  rooms:
    - {name: R, members: [a, c], host: alpha}
    - {name: S, members: [a, betabox/b], host: alpha}
  peers:
    - {name: betabox, url: "https://beta:8642", host: alpha, key: {from_env: BETA_KEY}}
"""


def _write(tmp_path, text=FLEET):
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_each_host_plans_only_its_own_slice(tmp_path, monkeypatch):
    monkeypatch.setenv("BETA_KEY", "k" * 20)
    fleet = _write(tmp_path)
    alpha = {f"{o['kind']}/{o['name']}" for o in plan_json(fleet, tmp_path / "ha", "--host", "alpha")["objects"]}
    beta = {f"{o['kind']}/{o['name']}" for o in plan_json(fleet, tmp_path / "hb", "--host", "beta")["objects"]}
    assert {"bot/a", "bot/c"} <= alpha and "bot/b" not in alpha
    assert {"bot/b", "bot/c"} <= beta and "bot/a" not in beta
    beta_install = next(o for o in plan_json(fleet, tmp_path / "hb", "--host", "beta")["objects"] if o["kind"] == "install")
    assert not any("betabox" in f["field"] or "PEER" in f["field"] for f in beta_install["fields"])


def test_a_fleet_without_hosts_is_applied_whole_everywhere(tmp_path):
    fleet = _write(tmp_path, "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: h}\nspec: {bots: [{name: x}]}\n")
    names = {o["name"] for o in plan_json(fleet, tmp_path / "h", "--host", "anything")["objects"]}
    assert "x" in names


def test_a_room_member_on_another_host_must_be_a_peer_member(tmp_path):
    fleet = _write(tmp_path, FLEET.replace("members: [a, betabox/b]", "members: [a, b]"))
    run = hermes_fleet("validate", "-f", fleet)
    assert run.code == 2
    assert "member 'b' lives on host 'beta'" in run.out and "cross_host" not in run.out
    assert "'<peer>/b'" in run.out


def test_a_home_inside_the_manifest_folder_is_never_read_as_manifests(tmp_path):
    fleet_dir = tmp_path / "fleet"
    fleet_dir.mkdir()
    (fleet_dir / "fleet.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: nested}\nspec: {bots: [{name: x, title: X}]}\n"
    )
    home = fleet_dir / "home"
    first = hermes_fleet("apply", "-R", "-f", fleet_dir, "--home", home)
    assert first.code == 0, first.text
    assert (home / "profiles" / "x" / "profile.yaml").is_file()
    again = hermes_fleet("plan", "-R", "-f", fleet_dir, "--home", home, "--detailed-exitcode")
    assert again.code == 0, again.text


def _slices(tmp_path, text, name):
    from controller.manifests import desired, reading

    folder = tmp_path / name
    folder.mkdir()
    (folder / "fleet.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    result = reading.load_paths([str(folder)], recursive=False, fleet=None)
    assert result.state is not None, [d.render() for d in result.errors]
    return {host: desired.for_host(result.state, host) for host in ("alpha", "beta")}


def test_a_slice_digest_moves_only_with_that_machines_slice(tmp_path):
    base = _slices(tmp_path, FLEET, "base")
    elsewhere = {
        "alpha bot": FLEET.replace("{name: a, host: alpha}", "{name: a, host: alpha, title: Renamed}"),
        "alpha room": FLEET.replace(
            "{name: R, members: [a, c], host: alpha}", "{name: R, members: [a, c], host: alpha, who_answers: auto}"
        ),
        "alpha peer": FLEET.replace('url: "https://beta:8642"', 'url: "https://beta:9000"'),
        "alpha section": FLEET.replace(
            "  bots:\n    - {name: a, host: alpha}", "  sections: [{name: A}]\n  bots:\n    - {name: a, host: alpha, section: A}"
        ),
    }
    for what, text in elsewhere.items():
        assert text != FLEET, what
        changed = _slices(tmp_path, text, what.replace(" ", "-"))
        assert changed["beta"].digest == base["beta"].digest, f"{what} moved beta's digest"
        assert changed["alpha"].digest != base["alpha"].digest, f"{what} did not move alpha's digest"
    everywhere = {
        "shared bot": FLEET.replace("{name: c}", "{name: c, title: Shared}"),
        "install-wide": FLEET.replace("spec:\n", "spec:\n  config: {timezone: Europe/Berlin}\n", 1),
    }
    for what, text in everywhere.items():
        assert text != FLEET, what
        changed = _slices(tmp_path, text, what.replace(" ", "-"))
        assert all(changed[h].digest != base[h].digest for h in ("alpha", "beta")), what


def test_an_edited_avatar_image_moves_the_digest_though_its_path_stays(tmp_path):
    from controller.manifests import reading

    (tmp_path / "fleet.yaml").write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: pics}\nspec: {bots: [{name: x, avatar: {image: x.png}}]}\n",
        encoding="utf-8",
    )
    digests = []
    for body in (b"one", b"two"):
        (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n" + body)
        state = reading.load_paths([str(tmp_path / "fleet.yaml")], recursive=False, fleet=None).state
        assert state is not None
        digests.append(state.digest)
    assert digests[0] != digests[1]
