"""`hermes-fleet validate` end to end: file discovery, stdin, fleet scoping, both manifest forms,
and hostile input through the real CLI entry (in-process and as a subprocess)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from controller import cli
from controller.manifests import loading, validating

REPO = Path(__file__).resolve().parents[2]
HEADER = "apiVersion: hermes-fleet/v1\n"
DIAG_LINE = re.compile(r"^(?P<file>[^\s].*?)(:\d+:\d+)?: (error|warning): ")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_subprocess(*argv: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "controller", *argv],
        input=stdin,
        capture_output=True,
        cwd=cwd or REPO,
        env=env,
        timeout=120,
        check=False,
    )


def validate_paths(*paths: Path, recursive: bool = False, fleet: str | None = None) -> validating.ValidationResult:
    files = loading.discover([str(p) for p in paths], recursive=recursive)
    documents, problems = loading.load_files(files)
    assert problems == []
    result = validating.validate(documents, fleet=fleet, files=files)
    assert result.errors == [], [x.render() for x in result.errors]
    assert result.state is not None
    return result


# --- the two manifest forms ----------------------------------------------------------------

ONE_FILE = """\
    apiVersion: hermes-fleet/v1
    kind: Fleet
    metadata:
      name: acme
    spec:
      defaults:
        model: {provider: openrouter, default: anthropic/claude-sonnet-4}
        env:
          LOG_LEVEL: info
      sections:
        - name: Team
        - name: Clients
          id: sec-mig3k2p1-4f9xq
      bots:
        - name: researcher
          title: Research Buddy
          description: Reads papers and source code, writes findings.
          section: Team
          model: {provider: anthropic, default: claude-opus-4}
          soul_file: souls/researcher.md
          toolsets: [web, terminal]
          skills: {disabled: [some-skill]}
          mcp_servers:
            github: {command: gh-mcp, args: [], env: {GITHUB_TOKEN: {from_env: GH_TOKEN}}}
          avatar: {kind: blob, seed: researcher, silhouette: round}
          env:
            OPENROUTER_API_KEY: {from_env: OPENROUTER_API_KEY}
          checkpoints: {enabled: true, max_snapshots: 20}
          config:
            approvals.mode: smart
            memory: {memory_char_limit: 4000}
          routines:
            - name: morning-digest
              schedule: "0 8 * * 1-5"
              prompt: Summarize overnight arXiv papers on agents.
            - name: weekly-review
              schedule: every 1d
              prompt: Review the week.
              paused: true
        - name: writer
          title: Writer
          section: Clients
          soul: |
            You write clearly.
          avatar: {shape: hexagon, color: "#8b5cf6"}
        - name: default
          description: The root profile.
      rooms:
        - name: Review
          members: [researcher, writer, spark/reviewer]
          who_answers: everyone
          detect_stop_directives: false
      peers:
        - name: spark
          url: https://spark.lan:8642
          key: {from_env: SPARK_PEER_KEY}
          note: the GPU box
      gateway:
        bot_loop_guard: {enabled: true, max_events: 4, window_seconds: 300}
        bot_mode_protocol: true
        group_router: {provider: openrouter, model: google/gemini-flash}
      checkpoints: {enabled: false, max_total_size_mb: 500}
      config: {timezone: Europe/Berlin}
"""

MANY_DOCUMENTS = {
    "policy.yaml": """\
        apiVersion: hermes-fleet/v1
        kind: Policy
        metadata: {name: install, fleet: acme}
        spec:
          defaults:
            model: {provider: openrouter, default: anthropic/claude-sonnet-4}
            env:
              LOG_LEVEL: info
          gateway:
            bot_loop_guard: {enabled: true, max_events: 4, window_seconds: 300}
            bot_mode_protocol: true
            group_router: {provider: openrouter, model: google/gemini-flash}
          checkpoints: {enabled: false, max_total_size_mb: 500}
          config: {timezone: Europe/Berlin}
    """,
    "bots.yaml": """\
        apiVersion: hermes-fleet/v1
        kind: Bot
        metadata: {name: writer, fleet: acme}
        spec:
          title: Writer
          section: Clients
          soul: |
            You write clearly.
          avatar: {shape: hexagon, color: "#8b5cf6"}
        ---
        apiVersion: hermes-fleet/v1
        kind: Bot
        metadata: {name: researcher, fleet: acme}
        spec:
          title: Research Buddy
          description: Reads papers and source code, writes findings.
          section: Team
          model: {provider: anthropic, default: claude-opus-4}
          soul_file: souls/researcher.md
          toolsets: [web, terminal]
          skills: {disabled: [some-skill]}
          mcp_servers:
            github: {command: gh-mcp, args: [], env: {GITHUB_TOKEN: {from_env: GH_TOKEN}}}
          avatar: {kind: blob, seed: researcher, silhouette: round}
          env:
            OPENROUTER_API_KEY: {from_env: OPENROUTER_API_KEY}
          checkpoints: {enabled: true, max_snapshots: 20}
          config:
            approvals.mode: smart
            memory: {memory_char_limit: 4000}
          routines:
            - name: morning-digest
              schedule: "0 8 * * 1-5"
              prompt: Summarize overnight arXiv papers on agents.
        ---
        apiVersion: hermes-fleet/v1
        kind: Bot
        metadata: {name: default, fleet: acme}
        spec:
          description: The root profile.
    """,
    "routines.yaml": """\
        apiVersion: hermes-fleet/v1
        kind: Routine
        metadata: {name: weekly-review, fleet: acme}
        spec:
          bot: researcher
          schedule: every 1d
          prompt: Review the week.
          paused: true
    """,
    "sections.yaml": """\
        apiVersion: hermes-fleet/v1
        kind: Section
        metadata: {name: Clients, fleet: acme}
        spec: {id: sec-mig3k2p1-4f9xq}
        ---
        apiVersion: hermes-fleet/v1
        kind: Section
        metadata: {name: Team, fleet: acme}
    """,
    "rooms.yaml": """\
        apiVersion: hermes-fleet/v1
        kind: Room
        metadata: {name: Review, fleet: acme}
        spec:
          members: [researcher, writer, spark/reviewer]
          who_answers: everyone
          detect_stop_directives: false
    """,
    "peers.yml": """\
        apiVersion: hermes-fleet/v1
        kind: Peer
        metadata: {name: spark, fleet: acme}
        spec:
          url: https://spark.lan:8642
          key: {from_env: SPARK_PEER_KEY}
          note: the GPU box
    """,
}


def without_origin(state):  # DesiredState -> comparable contents (origin = where it was declared)
    return replace(state, bots={name: replace(bot, origin=None) for name, bot in state.bots.items()})


def test_one_fleet_file_and_many_documents_give_the_same_desired_state(tmp_path: Path) -> None:
    single = tmp_path / "single"
    write(single, "souls/researcher.md", "You are a meticulous researcher.\n")
    write(single, "fleet.yaml", ONE_FILE)
    many = tmp_path / "many"
    write(many, "souls/researcher.md", "You are a meticulous researcher.\n")
    for name, text in MANY_DOCUMENTS.items():
        write(many, name, text)

    a = validate_paths(single / "fleet.yaml").state
    b = validate_paths(many).state
    assert a is not None and b is not None

    assert a.counts == b.counts == {"bots": 3, "routines": 2, "sections": 2, "rooms": 1, "peers": 1}
    assert a.digest.startswith("sha256:")
    assert a.digest == b.digest
    comparable_a, comparable_b = without_origin(a), without_origin(b)
    # field by field first, so a difference names the field
    for field in ("fleet", "sections", "rooms", "peers", "install_config"):
        assert getattr(comparable_a, field) == getattr(comparable_b, field), field
    assert set(a.bots) == set(b.bots) == {"researcher", "writer", "default"}
    for name in a.bots:
        bot_a, bot_b = comparable_a.bots[name], comparable_b.bots[name]
        # env base_dir is each form's own folder; everything else must match
        assert {k: (v.literal, v.ref) for k, v in bot_a.env.items()} == {k: (v.literal, v.ref) for k, v in bot_b.env.items()}, (
            name
        )
        assert replace(bot_a, env={}) == replace(bot_b, env={}), name
    assert {k: (v.literal, v.ref) for k, v in a.install_env.items()} == {k: (v.literal, v.ref) for k, v in b.install_env.items()}
    # the normalisation really happened (not two equally empty states)
    researcher = a.bots["researcher"]
    assert researcher.soul == "You are a meticulous researcher.\n"
    assert researcher.config["approvals.mode"] == "smart"
    assert researcher.config["memory.memory_char_limit"] == 4000
    assert researcher.config["model.default"] == "claude-opus-4"
    assert a.bots["writer"].config["model.default"] == "anthropic/claude-sonnet-4"  # from defaults
    assert a.bots["writer"].section == ("sec-mig3k2p1-4f9xq", "Clients")
    assert set(researcher.env) == {"OPENROUTER_API_KEY", "GITHUB_TOKEN", "LOG_LEVEL"}
    assert a.install_config["gateway.bot_loop_guard.max_events"] == 4
    assert a.install_config["bot_peers.spark.url"] == "https://spark.lan:8642"
    assert "HERMES_PEER_SPARK_KEY" in a.install_env


def test_many_documents_may_also_live_in_sub_folders_with_recursive(tmp_path: Path) -> None:
    single = tmp_path / "single"
    write(single, "souls/researcher.md", "You are a meticulous researcher.\n")
    write(single, "fleet.yaml", ONE_FILE)
    many = tmp_path / "many"
    write(many, "souls/researcher.md", "You are a meticulous researcher.\n")
    for name, text in MANY_DOCUMENTS.items():
        folder = "" if name == "bots.yaml" else "objects/"  # the soul_file stays relative to bots.yaml
        write(many, folder + name, text)

    assert validate_paths(many, recursive=True).state.digest == validate_paths(single).state.digest


def test_a_change_in_one_document_changes_the_digest(tmp_path: Path) -> None:
    write(tmp_path, "souls/researcher.md", "You are a meticulous researcher.\n")
    path = write(tmp_path, "fleet.yaml", ONE_FILE)
    before = validate_paths(path).state.digest
    path.write_text(path.read_text().replace("every 1d", "every 2d"))
    assert validate_paths(path).state.digest != before


# --- finding files ---------------------------------------------------------------------------

MINI = """\
    apiVersion: hermes-fleet/v1
    kind: Fleet
    metadata: {name: acme}
    spec:
      bots: [{name: alpha}]
"""


def bot_doc(name: str, fleet: str | None = "acme") -> str:
    meta = f"{{name: {name}, fleet: {fleet}}}" if fleet else f"{{name: {name}}}"
    return f"{HEADER}kind: Bot\nmetadata: {meta}\n"


def test_a_folder_is_read_with_its_sub_folders_and_R_changes_nothing(tmp_path: Path, capsys) -> None:
    write(tmp_path, "fleet.yaml", MINI)
    write(tmp_path, "beta.yml", bot_doc("beta"))
    write(
        tmp_path,
        "gamma.json",
        json.dumps({"apiVersion": "hermes-fleet/v1", "kind": "Bot", "metadata": {"name": "gamma", "fleet": "acme"}}),
    )
    write(tmp_path, "bots/delta.yaml", bot_doc("delta"))
    write(tmp_path, "bots/deeper/epsilon.yaml", bot_doc("epsilon"))
    write(tmp_path, "notes.txt", "not: [a manifest")
    write(tmp_path, ".hidden.yaml", "not: [a manifest")
    write(tmp_path, ".git/broken.yaml", "not: [a manifest")
    payloads = []
    for flags in ([], ["-R"]):
        code, out, _ = run(capsys, "validate", *flags, "-f", str(tmp_path), "-o", "json")
        assert code == 0, out
        payloads.append(json.loads(out))
    assert payloads[0] == payloads[1]
    assert payloads[0]["summary"]["files"] == 5
    assert payloads[0]["summary"]["bots"] == 5


def test_recursive_reads_sub_folders_but_not_hidden_ones(tmp_path: Path, capsys) -> None:
    write(tmp_path, "fleet.yaml", MINI)
    write(tmp_path, "team/a/beta.yaml", bot_doc("beta"))
    write(tmp_path, ".git/config.yaml", "not: [a manifest")
    code, out, _ = run(capsys, "validate", "-R", "-f", str(tmp_path), "-o", "json")
    assert code == 0, out
    assert json.loads(out)["summary"]["bots"] == 2


def test_repeated_f_merges_files_and_names_resolve_across_them(tmp_path: Path, capsys) -> None:
    write(tmp_path, "fleet.yaml", MINI)
    write(
        tmp_path,
        "room.yaml",
        f"{HEADER}kind: Room\nmetadata: {{name: Pair, fleet: acme}}\nspec: {{members: [alpha, beta]}}\n",
    )
    write(tmp_path, "beta.yaml", bot_doc("beta"))
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path / "fleet.yaml"), "-f", str(tmp_path / "room.yaml"))
    assert code == 2
    assert "member 'beta' is not a bot of this fleet" in out
    code, out, _ = run(
        capsys,
        "validate",
        "-f",
        str(tmp_path / "fleet.yaml"),
        "-f",
        str(tmp_path / "room.yaml"),
        "-f",
        str(tmp_path / "beta.yaml"),
    )
    assert code == 0, out


def test_the_same_file_twice_is_read_once(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "fleet.yaml", MINI)
    code, out, _ = run(capsys, "validate", "-f", str(path), "-f", str(path))
    assert code == 0, out


def test_missing_path_is_bad_input_with_a_hint(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "validate", "-f", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "no such file or folder" in err and "check the -f path" in err
    assert "Traceback" not in out + err


def test_a_folder_with_only_sub_folders_is_read(tmp_path: Path, capsys) -> None:
    write(tmp_path, "team/fleet.yaml", MINI)
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 0, out
    assert "fleet 'acme'" in out


def test_a_folder_without_manifests_names_what_was_searched(tmp_path: Path, capsys) -> None:
    write(tmp_path, "team/notes.md", "# not a manifest\n")
    write(tmp_path, ".hidden/fleet.yaml", MINI)
    code, _, err = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 2
    assert "no manifest files (*.yaml, *.yml, *.json) found in" in err and "sub-folders are searched" in err


def test_stdin_is_read_with_f_dash() -> None:
    proc = run_subprocess("validate", "-f", "-", "-o", "json", stdin=textwrap.dedent(MINI).encode())
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["summary"]["bots"] == 1


def test_stdin_errors_are_reported_against_stdin() -> None:
    proc = run_subprocess("validate", "-f", "-", stdin=b"apiVersion: hermes-fleet/v1\nkind: Bott\nmetadata: {name: a}\n")
    assert proc.returncode == 2
    assert b"<stdin>:2:1: error: kind: unknown kind 'Bott'; did you mean 'Bot'?" in proc.stdout
    assert b"Traceback" not in proc.stderr


def test_stdin_in_process_with_a_real_pipe(tmp_path: Path, capsys, monkeypatch) -> None:
    source = write(tmp_path, "in.yaml", MINI)
    with source.open("rb") as handle:
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": handle})())
        code, out, _ = run(capsys, "validate", "-f", "-")
    assert code == 0, out
    assert "fleet 'acme', 1 bot(s)" in out


# --- one fleet per run -----------------------------------------------------------------------


def test_documents_without_any_fleet_name_are_an_error(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "bot.yaml", bot_doc("alpha", fleet=None))
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2
    assert f"{path}:3:1: error: metadata: no fleet name" in out
    assert "--fleet" in out


def test_fleet_flag_names_the_fleet_for_documents_without_one(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "bot.yaml", bot_doc("alpha", fleet=None))
    code, out, _ = run(capsys, "validate", "-f", str(path), "--fleet", "acme")
    assert code == 0, out
    assert "fleet 'acme'" in out


def test_invalid_fleet_flag_is_rejected(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "bot.yaml", bot_doc("alpha", fleet=None))
    code, out, _ = run(capsys, "validate", "-f", str(path), "--fleet", "Not A Name")
    assert code == 2
    assert "<command line>: error: --fleet: invalid fleet name" in out


SEVERAL_FLEETS = [
    pytest.param({"a.yaml": bot_doc("alpha", "one"), "b.yaml": bot_doc("beta", "two")}, ("one", "two"), id="metadata-fleets"),
    pytest.param({"f.yaml": MINI, "b.yaml": bot_doc("beta", "other")}, ("acme", "other"), id="fleet-doc-vs-metadata"),
    pytest.param(
        {"f.yaml": MINI, "g.yaml": MINI.replace("acme", "other").replace("alpha", "zed")},
        ("acme", "other"),
        id="two-fleet-documents",
    ),
]


@pytest.mark.parametrize(("files", "names"), SEVERAL_FLEETS)
def test_plan_refuses_more_than_one_fleet_and_says_how_to_pick_one(tmp_path: Path, capsys, files, names) -> None:
    for name, text in files.items():
        write(tmp_path / "m", name, text)
    code, _, err = run(capsys, "plan", "-f", str(tmp_path / "m"), "--home", str(tmp_path / "home"))
    assert code == 2
    assert f"is one of 2 fleets in these manifests ('{names[0]}', '{names[1]}')" in err or (
        f"is one of 2 fleets in these manifests ('{names[1]}', '{names[0]}')" in err
    ), err
    assert "plan and apply take one fleet at a time: pass only its files, -f " in err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("files", "names"), SEVERAL_FLEETS)
def test_validate_checks_each_fleet_on_its_own(tmp_path: Path, capsys, files, names) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 0, out
    for name in names:
        assert f"valid: fleet '{name}'" in out
    assert out.rstrip().endswith("valid: 2 fleet(s), 2 valid, 0 invalid")
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path), "-o", "json")
    payload = json.loads(out)
    assert code == 0 and payload["valid"] is True and payload["fleet"] is None
    assert sorted(f["fleet"] for f in payload["fleets"]) == sorted(names)


def test_validate_reports_each_fleet_and_fails_when_one_is_invalid(tmp_path: Path, capsys) -> None:
    write(tmp_path, "good/fleet.yaml", MINI)
    write(tmp_path, "bad/fleet.yaml", MINI.replace("acme", "other").replace("alpha", "Not A Name"))
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path), "-o", "json")
    assert code == 2
    payload = json.loads(out)
    by_fleet = {f["fleet"] or "invalid": f for f in payload["fleets"]}
    assert payload["valid"] is False and payload["summary"]["errors"] == 1
    assert by_fleet["acme"]["valid"] is True
    (bad,) = [f for f in payload["fleets"] if not f["valid"]]
    assert bad["diagnostics"][0]["file"].endswith("bad/fleet.yaml")
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 2 and "invalid: 2 fleet(s), 1 valid, 1 invalid" in out


def test_documents_naming_no_fleet_among_several_fleets_are_reported(tmp_path: Path, capsys) -> None:
    write(tmp_path, "a.yaml", bot_doc("alpha", "one"))
    write(tmp_path, "b.yaml", bot_doc("beta", "two"))
    write(tmp_path, "c.yaml", bot_doc("gamma", None))
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 2
    assert "no fleet name: the ownership scope is unknown" in out
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path), "--fleet", "two", "-o", "json")
    assert code == 0, out
    fleets = {f["fleet"]: f for f in json.loads(out)["fleets"]}
    assert fleets["two"]["summary"]["bots"] == 2 and fleets["one"]["summary"]["bots"] == 1


def test_a_fleet_flag_that_contradicts_the_only_fleet_is_an_error(tmp_path: Path, capsys) -> None:
    write(tmp_path, "f.yaml", MINI)
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path), "--fleet", "other")
    assert code == 2
    assert re.search(r"fleets \(acme, other\)", out), out
    assert "one fleet at a time" in out


def test_the_same_fleet_named_by_document_and_flag_is_fine(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "f.yaml", MINI)
    code, out, _ = run(capsys, "validate", "-f", str(path), "--fleet", "acme")
    assert code == 0, out


def test_an_empty_manifest_set_is_not_reported_as_valid(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "empty.yaml", "# nothing yet\n---\n")
    code, out, _ = run(capsys, "validate", "-f", str(path), "-o", "json")
    payload = json.loads(out)
    assert code == 2
    assert payload["valid"] is False
    assert payload["summary"]["errors"] >= 1
    assert any(d["code"] == "fleet" for d in payload["diagnostics"])


def test_an_empty_file_with_a_fleet_flag_is_an_empty_fleet(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "empty.yaml", "")
    code, out, _ = run(capsys, "validate", "-f", str(path), "--fleet", "acme", "-o", "json")
    assert code == 0, out
    assert json.loads(out)["summary"]["bots"] == 0


# --- "did you mean" ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            f"{HEADER}kind: Flet\nmetadata: {{name: acme}}\n",
            "kind: unknown kind 'Flet'; did you mean 'Fleet'?",
            id="kind",
        ),
        pytest.param(
            f"{HEADER}kind: Fleet\nmetadata: {{name: acme}}\nspec:\n  bots: [{{name: a, titel: A}}]\n",
            "spec.bots[0].titel: unknown field 'titel'; did you mean 'title'?",
            id="bot-field",
        ),
        pytest.param(
            f"{HEADER}kind: Fleet\nmetadata: {{name: acme}}\nspec:\n  bot: []\n",
            "spec.bot: unknown field 'bot'; did you mean 'bots'?",
            id="spec-field",
        ),
        pytest.param(
            f"{HEADER}kind: Fleet\nmetdata: {{name: acme}}\n",
            "metdata: unknown field 'metdata'; did you mean 'metadata'?",
            id="envelope-field",
        ),
        pytest.param(
            f"{HEADER}kind: Bot\nmetadata: {{name: a, fleet: acme}}\nspec:\n  routines:\n"
            "    - {name: r, schedule: every 1h, prompt: x, pasued: true}\n",
            "spec.routines[0].pasued: unknown field 'pasued'; did you mean 'paused'?",
            id="routine-field",
        ),
        pytest.param(
            f"{HEADER}kind: Fleet\nmetadata: {{name: acme}}\nspec:\n  gateway: {{bot_loop_gaurd: {{}}}}\n",
            "spec.gateway.bot_loop_gaurd: unknown field 'bot_loop_gaurd'; did you mean 'bot_loop_guard'?",
            id="nested-field",
        ),
        pytest.param(
            f"{HEADER}kind: Fleet\nmetadata: {{name: acme}}\nspec:\n  sections: [{{name: Team}}]\n"
            "  bots: [{name: a, section: Teem}]\n",
            "section 'Teem' is not declared; did you mean 'Team'?",
            id="section-reference",
        ),
    ],
)
def test_unknown_names_get_a_did_you_mean_suggestion(tmp_path: Path, capsys, text: str, expected: str) -> None:
    path = write(tmp_path, "m.yaml", text)
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2
    assert expected in out, out


def test_unknown_field_without_a_close_match_lists_the_allowed_fields(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "m.yaml", f"{HEADER}kind: Section\nmetadata: {{name: T, fleet: acme}}\nspec: {{zzzz: 1}}\n")
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2
    assert "unknown field 'zzzz'; allowed fields here: id" in out


# --- hostile input through the CLI -------------------------------------------------------------

BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi", strict=True)
)

HOSTILE = [
    pytest.param(
        b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata:\n\tname: acme\n",
        4,
        1,
        "tab character",
        id="tab",
    ),
    pytest.param(
        b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme\n",
        4,
        1,
        "YAML syntax error",
        id="syntax",
    ),
    pytest.param(
        b"apiVersion: hermes-fleet/v1\nkind: Fleet\nkind: Bot\nmetadata: {name: a}\n",
        3,
        1,
        "duplicate key 'kind'",
        id="duplicate-key",
    ),
    pytest.param(BOMB.encode(), None, None, "alias bomb", id="alias-bomb"),
    pytest.param(b"a: &a\n  b: *a\n", 1, 4, "recursive", id="recursive-alias"),
    pytest.param(("a: " + "[" * 100 + "]" * 100 + "\n").encode(), 1, None, "nesting is deeper", id="deep-nesting"),
    pytest.param(
        b"apiVersion: !!python/object/apply:os.system ['true']\n",
        1,
        None,
        "unsupported YAML tag",
        id="python-tag",
    ),
    pytest.param(b"\x7fELF\x02\x01\x01\x00\x00\x00", 1, 8, "binary file", id="binary"),  # the first NUL
    pytest.param(b"apiVersion: hermes-fleet/v1\nkind: \xff\xfe\n", 2, 7, "not UTF-8", id="latin1"),  # the bad byte
    pytest.param(b"- just\n- a list\n", 1, 1, "must be a mapping, not a list", id="top-level-list"),
    pytest.param(
        b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec: [1, 2]\n",
        4,
        1,
        "spec: input should be a mapping (key: value lines), got a list; see docs/manifest.md#fleet-and-policy",
        id="wrong-type-spec",
    ),
    pytest.param(
        b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec:\n  bots: [{name: [1]}]\n",
        5,
        11,
        "spec.bots[0].name: input should be a valid string, got a list",
        id="wrong-type-name",
    ),
    pytest.param(b"apiVersion: hermes-fleet/v2\nkind: Fleet\n", 1, 1, "unknown apiVersion", id="api-version"),
    pytest.param(b"kind: Fleet\n", 1, 1, "missing apiVersion", id="no-api-version"),
]


@pytest.mark.parametrize(("content", "line", "column", "message"), HOSTILE)
def test_hostile_input_is_exit_2_with_a_located_message(tmp_path: Path, capsys, content, line, column, message):
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    code, out, err = run(capsys, "validate", "-f", str(path))
    assert code == 2
    assert "Traceback" not in out + err
    errors = [x for x in out.splitlines() if ": error: " in x]
    assert errors, out
    first = errors[0]
    assert first.startswith(str(path))
    assert message in first, first
    match = re.match(rf"^{re.escape(str(path))}(?::(\d+):(\d+))?: error: (.+); (.+)$", first)
    assert match, f"not 'file:line:column: error: what; what to do': {first}"
    if line is not None:
        assert int(match.group(1) or 0) == line
    if column is not None:
        assert int(match.group(2) or 0) == column


def test_huge_file_is_refused_before_it_is_read(tmp_path: Path, capsys) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:  # sparse: no disk or memory used
        handle.truncate(loading.MAX_FILE_BYTES + 1)
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2
    assert f"{path}: error: file is {loading.MAX_FILE_BYTES + 1:,} bytes, over the" in out


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata:\n\tname: acme\n", id="tab"),
        pytest.param(BOMB.encode(), id="alias-bomb"),
        pytest.param(b"\x00\x01\x02binary", id="binary"),
        pytest.param(
            b"apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\nspec: {bots: 3}\n",
            id="wrong-type",
        ),
        pytest.param(b"{{{{", id="garbage"),
        pytest.param(b"kind: \x01\x02\x1b[31m\n", id="control-characters"),
    ],
)
def test_no_traceback_reaches_stderr_of_the_real_process(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    proc = run_subprocess("validate", "-f", str(path))
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr + proc.stdout
    lines = [x for x in proc.stdout.decode().splitlines() if ": error: " in x]
    assert lines and all(DIAG_LINE.match(x) for x in lines), proc.stdout


def test_bad_arguments_are_exit_2(capsys) -> None:
    assert cli.main(["validate"]) == 2  # -f is required
    assert cli.main(["validate", "-f", "x", "--output", "yaml"]) == 2
    assert cli.main(["frobnicate"]) == 2
    capsys.readouterr()


def test_help_is_exit_0(capsys) -> None:
    assert cli.main(["--help"]) == 0
    assert "validate" in capsys.readouterr().out


def test_a_yaml_syntax_error_is_the_only_error_reported(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "fleet.yaml", "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: [acme\n")
    for verb in (["validate"], ["plan", "--home", str(tmp_path / "home")]):
        code, out, err = run(capsys, *verb, "-f", str(path))
        assert code == 2
        text = out + err
        assert "YAML syntax error" in text
        assert "no manifest documents were read" not in text
        assert len([line for line in text.splitlines() if ": error: " in line]) == 1, text
