"""Under `-o json`, every verb prints exactly one JSON document on stdout, on every path.

Each case runs the real CLI in a subprocess (as CI would) and checks the exit code, that stdout
parses as one JSON document, and the document's shape for that path: the verb's report (success,
changes, failed objects, conflicts) or an error document (docs/cli.md, "JSON on every path").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import locking

REPO = Path(__file__).resolve().parents[2]

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  bots:
    - name: alpha
      title: Alpha
"""
SECRET_FLEET = FLEET + "      env: {OPENROUTER_API_KEY: {from_env: CONTRACT_UNSET_KEY}}\n"
INVALID_FLEET = FLEET.replace("title: Alpha", "titel: Alpha")
ERROR_KEYS = {"schemaVersion", "kind", "error", "diagnostics"}


def cli(tmp_path: Path, *argv: str | Path, stdin: str = "") -> tuple[int, Any, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_") and k != "CONTRACT_UNSET_KEY"}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path / "user"), NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "controller", *map(str, argv)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    try:
        document = json.loads(proc.stdout)  # exactly one document: json.loads refuses trailing data
    except ValueError:
        pytest.fail(f"stdout is not one JSON document (exit {proc.returncode}):\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    assert document["schemaVersion"] == 1
    return proc.returncode, document, proc.stderr


def write(tmp_path: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / "m" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def assert_error(document: dict[str, Any], kind: str, error_type: str, code: int) -> None:
    assert set(document) >= ERROR_KEYS, document
    assert document["kind"] == kind
    assert document["error"]["type"] == error_type and document["error"]["exit_code"] == code
    assert document["error"]["message"]


# --- validate ---------------------------------------------------------------------------------


def test_validate_valid_0(tmp_path):
    code, doc, _ = cli(tmp_path, "validate", "-f", write(tmp_path, FLEET), "-o", "json")
    assert code == 0 and doc["kind"] == "validate" and doc["valid"] is True and doc["fleet"] == "acme"


def test_validate_invalid_2_has_the_diagnostics(tmp_path):
    code, doc, _ = cli(tmp_path, "validate", "-f", write(tmp_path, INVALID_FLEET), "-o", "json")
    assert code == 2 and doc["valid"] is False
    assert doc["diagnostics"][0]["code"] == "unknown_field" and "error" not in doc


def test_validate_missing_path_2(tmp_path):
    code, doc, err = cli(tmp_path, "validate", "-f", tmp_path / "nope", "-o", "json")
    assert code == 2
    assert_error(doc, "validate", "UsageError", 2)
    assert doc["valid"] is False and "no such file or folder" in doc["error"]["message"]
    assert "no such file or folder" in err  # the human message still goes to stderr


def test_validate_bad_argument_2(tmp_path):
    code, doc, err = cli(tmp_path, "validate", "-f", write(tmp_path, FLEET), "-o", "json", "--no-such-flag")
    assert code == 2
    assert_error(doc, "validate", "UsageError", 2)
    assert "--no-such-flag" in doc["error"]["message"] and "usage:" in err


def test_validate_yaml_error_2(tmp_path):
    code, doc, _ = cli(tmp_path, "validate", "-f", write(tmp_path, "a: [1, 2\n"), "-o", "json")
    assert code == 2 and [d["code"] for d in doc["diagnostics"]] == ["yaml"]


# --- plan -------------------------------------------------------------------------------------


def test_plan_changes_0_and_4(tmp_path):
    manifest, home = write(tmp_path, FLEET), tmp_path / "home"
    code, doc, _ = cli(tmp_path, "plan", "-f", manifest, "--home", home, "-o", "json")
    assert code == 0 and doc["kind"] == "plan" and doc["summary"]["changes_pending"] is True
    code, doc, _ = cli(tmp_path, "plan", "-f", manifest, "--home", home, "-o", "json", "--detailed-exitcode")
    assert code == 4 and doc["kind"] == "plan" and "error" not in doc


def test_plan_invalid_manifest_2(tmp_path):
    code, doc, _ = cli(tmp_path, "plan", "-f", write(tmp_path, INVALID_FLEET), "--home", tmp_path / "h", "-o", "json")
    assert code == 2
    assert_error(doc, "plan", "ManifestError", 2)
    assert doc["diagnostics"][0]["path"] == "spec.bots[0].titel"
    assert not (tmp_path / "h").exists()


def test_plan_several_fleets_2(tmp_path):
    write(tmp_path, FLEET, "a.yaml")
    write(tmp_path, FLEET.replace("acme", "other"), "b.yaml")
    code, doc, _ = cli(tmp_path, "plan", "-f", tmp_path / "m", "--home", tmp_path / "h", "-o", "json")
    assert code == 2
    assert_error(doc, "plan", "ManifestError", 2)
    assert {d["code"] for d in doc["diagnostics"]} == {"fleet"} and len(doc["diagnostics"]) == 2


def test_plan_bad_duration_2(tmp_path):
    code, doc, _ = cli(tmp_path, "plan", "-f", write(tmp_path, FLEET), "-o", "json", "--gateway-timeout", "2x")
    assert code == 2
    assert_error(doc, "plan", "UsageError", 2)
    assert "invalid duration '2x'" in doc["error"]["message"]


def test_plan_secret_unavailable_1(tmp_path):
    code, doc, _ = cli(tmp_path, "plan", "-f", write(tmp_path, SECRET_FLEET), "--home", tmp_path / "h", "-o", "json")
    assert code == 1 and doc["kind"] == "plan"
    (alpha,) = [o for o in doc["objects"] if o["name"] == "alpha"]
    assert alpha["action"] == "error" and alpha["reason_code"] == "secret-unavailable"


def test_plan_conflict_3(tmp_path):
    home = tmp_path / "home"
    (home / "profiles" / "alpha").mkdir(parents=True)
    (home / "profiles" / "alpha" / "config.yaml").write_text("model: {default: x}\n")
    code, doc, _ = cli(tmp_path, "plan", "-f", write(tmp_path, FLEET), "--home", home, "-o", "json")
    assert code == 3 and doc["kind"] == "plan"
    assert [o["reason_code"] for o in doc["objects"] if o["action"] == "conflict"] == ["unmanaged"]


# --- apply ------------------------------------------------------------------------------------


def test_apply_0_and_dry_run(tmp_path):
    manifest, home = write(tmp_path, FLEET), tmp_path / "home"
    code, doc, _ = cli(tmp_path, "apply", "-f", manifest, "--home", home, "-o", "json", "--dry-run")
    assert code == 0 and doc["kind"] == "dry-run" and not home.exists()
    code, doc, _ = cli(tmp_path, "apply", "-f", manifest, "--home", home, "-o", "json")
    assert code == 0 and doc["kind"] == "apply" and all(r["ok"] for r in doc["results"])


def test_apply_invalid_manifest_2_for_apply_and_dry_run(tmp_path):
    manifest = write(tmp_path, INVALID_FLEET)
    for flags, kind in (([], "apply"), (["--dry-run"], "dry-run")):
        code, doc, _ = cli(tmp_path, "apply", "-f", manifest, "--home", tmp_path / "h", "-o", "json", *flags)
        assert code == 2
        assert_error(doc, kind, "ManifestError", 2)


def test_apply_failure_1(tmp_path):
    code, doc, _ = cli(tmp_path, "apply", "-f", write(tmp_path, SECRET_FLEET), "--home", tmp_path / "h", "-o", "json")
    assert code == 1 and doc["kind"] == "apply" and "results" in doc
    assert [o["reason_code"] for o in doc["objects"] if o["action"] == "error"] == ["secret-unavailable"]


def test_apply_conflict_3_prints_the_refused_plan_once(tmp_path):
    home = tmp_path / "home"
    (home / "profiles" / "alpha").mkdir(parents=True)
    (home / "profiles" / "alpha" / "config.yaml").write_text("model: {default: x}\n")
    code, doc, err = cli(tmp_path, "apply", "-f", write(tmp_path, FLEET), "--home", home, "-o", "json")
    assert code == 3 and doc["kind"] == "apply" and "error" not in doc
    assert [o["action"] for o in doc["objects"] if o["name"] == "alpha"] == ["conflict"]
    assert "apply refused" in err


def test_apply_lock_held_3(tmp_path):
    manifest, home = write(tmp_path, FLEET), tmp_path / "home"
    home.mkdir()
    with locking.apply_lock(home, timeout=1):
        code, doc, _ = cli(tmp_path, "apply", "-f", manifest, "--home", home, "-o", "json", "--lock-timeout", "300ms")
    assert code == 3
    assert_error(doc, "apply", "LockHeld", 3)


# --- status, restore, init --------------------------------------------------------------------


def test_status_0_and_with_manifests(tmp_path):
    manifest, home = write(tmp_path, FLEET), tmp_path / "home"
    assert cli(tmp_path, "apply", "-f", manifest, "--home", home, "-o", "json")[0] == 0
    code, doc, _ = cli(tmp_path, "status", "--home", home, "-o", "json")
    assert code == 0 and doc["kind"] == "status" and doc["fleets"][0]["fleet"] == "acme"
    code, doc, _ = cli(tmp_path, "status", "--home", home, "-f", manifest, "-o", "json")
    assert code == 0 and doc["fleets"][0]["pending"]["changes_pending"] is False


def test_status_invalid_manifest_2(tmp_path):
    code, doc, _ = cli(tmp_path, "status", "--home", tmp_path / "h", "-f", write(tmp_path, INVALID_FLEET), "-o", "json")
    assert code == 2
    assert_error(doc, "status", "ManifestError", 2)


def test_status_unreadable_inventory_1(tmp_path):
    folder = tmp_path / "home" / ".hermes-fleet" / "inventory"
    folder.mkdir(parents=True)
    (folder / "acme.json").write_text("{not json")
    code, doc, _ = cli(tmp_path, "status", "--home", tmp_path / "home", "-o", "json")
    assert code == 1
    assert_error(doc, "status", "HermesStateError", 1)


def test_restore_list_0_and_unknown_backup_1(tmp_path):
    code, doc, _ = cli(tmp_path, "restore", "--home", tmp_path / "home", "-o", "json")
    assert code == 0 and doc == {"schemaVersion": 1, "kind": "restore", "home": str(tmp_path / "home"), "backups": []}
    code, doc, _ = cli(tmp_path, "restore", "--home", tmp_path / "home", "-o", "json", "20990101T000000Z-nobody")
    assert code in (1, 2)
    assert_error(doc, "restore", doc["error"]["type"], code)


def test_init_0_and_not_a_folder_2(tmp_path):
    code, doc, _ = cli(tmp_path, "init", tmp_path / "repo", "-o", "json")
    assert code == 0 and doc["kind"] == "init" and "fleet/fleet.yaml" in doc["written"]
    (tmp_path / "file").write_text("x")
    code, doc, _ = cli(tmp_path, "init", tmp_path / "file", "-o", "json")
    assert code == 2
    assert_error(doc, "init", "UsageError", 2)
