"""What a large apply keeps in memory, and that the compact forms write the same bytes (issue 15).

The inventory, the parse cache and the history entry are rendered into one buffer, or from text
rendered ahead, instead of through whole-document strings; the files must be byte for byte what
the plain `json.dumps` forms give. Observed documents share their equal keys and lists; the
values must stay equal to the decoded ones.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import configfile, fsio, inventory, parsecache, sharing
from controller.adapters import history as history_file
from controller.core.types import Action, FieldChange, Kind, ObjectChange, Op, Plan, Reason
from controller.engine import history, observing
from controller.manifests import reading
from controller.verbs import reporting

TRICKY: dict[str, Any] = {
    "bot/é": {"applied": {"config:x": [1, 1.5, True, None, "ünï\u2028"], "soul": "sha256:ab"}, "created_at": "t"},
    "bot/a": {},
    "routine/a/b/c": {"job_id": "1", "applied": {"prompt": 'say "hi"\n', "skills": []}},
}


def _old_inventory_text(data: dict[str, Any]) -> str:
    # The form render() had before it wrote into a buffer (one object per line, objects last).
    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))

    head = [f"{compact(key)}:{compact(data[key])}" for key in sorted(data) if key != "objects"]
    objects = [f"{compact(key)}:{compact(value)}" for key, value in sorted(data.get("objects", {}).items())]
    body = ",\n".join([*head, '"objects":{\n' + ",\n".join(objects) + "\n}" if objects else '"objects":{}'])
    return "{\n" + body + "\n}\n"


def test_inventory_bytes_are_the_line_form() -> None:
    for data in (
        {"fleet": "f", "objects": {}},
        {"fleet": "f"},
        {"schemaVersion": 1, "fleet": "f", "salt": "s", "last_apply": None, "history": [{"at": "x"}], "objects": TRICKY},
    ):
        blob = inventory.render_bytes(data)
        assert blob.decode("ascii") == _old_inventory_text(data) == inventory.render(data)
        assert json.loads(blob) == {**data, "objects": data.get("objects", {})}


def test_parse_cache_bytes_are_json_dumps() -> None:
    for data in ({"version": 1, "documents": {}}, {"version": 1, "documents": {"d2": {"a": [1, "é"]}, "d1": {}}}):
        assert parsecache.render(data) == (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode()


def test_inventory_and_parse_cache_files_are_written_as_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The files are the rendered bytes, handed to the atomic write piece by piece (never one bytes
    # object of the whole document).
    handed: list[object] = []
    real_write = fsio.atomic_write_bytes

    def spy(path: Path, data: Any, **kwargs: Any) -> None:
        handed.append(data)
        real_write(path, data, **kwargs)

    monkeypatch.setattr(fsio, "atomic_write_bytes", spy)
    data = {"schemaVersion": 1, "fleet": "f", "salt": "s", "last_apply": None, "history": [], "objects": TRICKY}
    inventory.write(tmp_path, "f", data)
    assert inventory.inventory_path(tmp_path, "f").read_bytes() == inventory.render_bytes(data)
    configfile.ConfigDoc.load(tmp_path / "config.yaml")  # nothing there: the cache holds no document
    parsecache.save(tmp_path)
    assert json.loads(parsecache.cache_path(tmp_path).read_bytes()) == {"version": 1, "documents": {}}
    assert len(handed) == 2 and not any(isinstance(d, bytes | bytearray) for d in handed)
    cache = {"version": 1, "documents": {"d2": {"a": [1, "é"]}, "d1": {}}}
    assert b"".join(parsecache.render_chunks(cache)) == parsecache.render(cache)


def test_atomic_write_takes_chunks(tmp_path: Path) -> None:
    target = tmp_path / "f"
    fsio.atomic_write_bytes(target, (bytes([65 + i]) * 10_000 for i in range(5)), mode=0o600)
    assert target.read_bytes() == b"".join(bytes([65 + i]) * 10_000 for i in range(5))
    assert target.stat().st_mode & 0o777 == 0o600


def test_a_packed_history_entry_is_the_same_file(tmp_path: Path) -> None:
    documents = [{"source": "f.yaml", "folder": "/m", "data": {"kind": "Fleet", "spec": {"bots": [{"name": "é"}]}}, "files": {}}]
    entry = {"at": "2026", "command": "apply", "counts": {"created": 1}, "desired": {"documents": documents, "host": None}}
    plain_root, packed_root = tmp_path / "plain", tmp_path / "packed"
    history_file.append(plain_root, "f", json.loads(json.dumps(entry)), keep=5)
    packed = {**entry, "desired": {**entry["desired"], "documents": history_file.PACKED}}
    history_file.append(packed_root, "f", packed, keep=5, documents=history_file.documents_json(documents))
    written = history_file.entry_path(packed_root, "f", 1).read_bytes()
    assert written == history_file.entry_path(plain_root, "f", 1).read_bytes()
    assert json.loads(written)["desired"]["documents"] == documents


def test_the_apply_snapshot_holds_text_not_the_manifest_trees(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: mem}\nspec:\n  bots:\n"
        "    - {name: alpha, title: Ünï, toolsets: [web]}\n",
        encoding="utf-8",
    )
    result = reading.load_paths([str(fleet)], recursive=False, fleet=None)
    assert not result.errors
    unpacked = history.Snapshot(documents=[history._document(doc) for doc in result.loaded])
    snap = history.snapshot(result, fleet_arg=None, host=None, revision="r")
    assert snap.documents == [] and snap.packed == history_file.documents_json(unpacked.documents)
    assert snap.fingerprint == unpacked.fingerprint
    assert json.loads(snap.packed)[0]["data"]["spec"]["bots"][0]["title"] == "Ünï"


def test_shared_values_are_equal_and_held_once() -> None:
    pool = sharing.Sharer()
    first = pool.share({"platform_toolsets": {"cli": ["web", "terminal"], "api": ["web", "terminal"]}, "n": [1, True]})
    second = pool.share({"platform_toolsets": {"cli": ["web", "terminal"]}, "n": [True, 1], "m": [1.0, 1]})
    assert first == {"platform_toolsets": {"cli": ["web", "terminal"], "api": ["web", "terminal"]}, "n": [1, True]}
    assert second == {"platform_toolsets": {"cli": ["web", "terminal"]}, "n": [True, 1], "m": [1.0, 1]}
    assert first["platform_toolsets"]["cli"] is first["platform_toolsets"]["api"] is second["platform_toolsets"]["cli"]
    # 1, 1.0 and True are equal in Python but not the same value in a document.
    assert [type(v) for v in second["n"]] == [bool, int] and [type(v) for v in second["m"]] == [float, int]
    assert [type(v) for v in first["n"]] == [int, bool]


def test_observation_holds_one_copy_of_what_profiles_share(tmp_path: Path) -> None:
    config = "model:\n  default: m\nplatform_toolsets:\n  cli: [web, terminal]\n  api_server: [web, terminal]\n"
    for name in ("alpha", "beta"):
        folder = tmp_path / "profiles" / name
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(config, encoding="utf-8")
    pool = sharing.Sharer()
    alpha, beta = (observing.observe_profile(tmp_path, n, pool=pool) for n in ("alpha", "beta"))
    assert (
        alpha.config
        == beta.config
        == {
            "model": {"default": "m"},
            "platform_toolsets": {"cli": ["web", "terminal"], "api_server": ["web", "terminal"]},
        }
    )
    assert alpha.config is not None and beta.config is not None
    assert alpha.config["platform_toolsets"]["cli"] is beta.config["platform_toolsets"]["api_server"]


def test_the_plan_is_written_in_pieces_as_the_same_text() -> None:
    changes = tuple(
        ObjectChange(
            kind=Kind.BOT,
            name=f"bot{i}",
            action=Action.CREATE,
            code=Reason.NEW,
            reason="profile does not exist",
            fields=tuple(FieldChange(field=f"config:k{j}", op=Op.ADD, old=None, new=[j, "x"]) for j in range(3)),
        )
        for i in range(7)
    )
    plan = Plan("f", "sha256:" + "0" * 64, changes, notes=("a note",))
    for batch in (1, 2, 5, 10_000):
        out = io.StringIO()
        reporting.write_lines(reporting.plan_lines(plan, home="/h", color=True), out, batch=batch)
        assert out.getvalue() == reporting.plan_text(plan, home="/h", color=True)
    assert reporting.plan_text(plan, home="/h", color=False).count("\n") == 2 + 7 * 4 + 3
