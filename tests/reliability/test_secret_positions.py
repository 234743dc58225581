"""Secrets written by hand into a managed bot's files never reach an output (issue 27, item 2).

A fleet is applied, then a user (or a bot with file tools) writes a distinct credential into every
position where one can hide: an MCP server's `env`, `headers` and `args` (`--api-key=...` and the
item after `--token`), its URL's query, a TTS `api_key`, a model `base_url`'s user-info, a managed
`.env` value, the Bot Mode title and section name, a routine's name and prompt (token-shaped: the
masking rule has no key to go by there), and a `SOUL.md` that is a link out of the profile. Every
verb that shows the home — plan, apply (text and JSON), status, history, export (stdout, stderr and
each file written), watch's log — is run, and no token may appear, as bytes, in any of them. Each
token names its position, so a failure says which one leaked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from controller.redact import SECRET, mask_args, mask_text, masked
from tests.integration.helpers import Run, hermes_fleet, write_fleet

# Plain tokens: only their place (the key, the block) says they are credentials.
MCP_ENV = "posMCPENV-4f1a2b3c"
MCP_HEADER = "posMCPHEADER-5e6f7a8b"
MCP_ARG_EQ = "posMCPARGEQ-9c0d1e2f"
MCP_ARG_NEXT = "posMCPARGNEXT-3a4b5c6d"
MCP_URL_QUERY = "posMCPURLQ-7e8f9a0b"
TTS_KEY = "posTTSKEY-1c2d3e4f"
BASE_URL_USERINFO = "posBASEURLPW-5a6b7c8d"
OUTSIDE_SOUL = "posOUTSIDESOUL-9e0f1a2b"
# Token-shaped: found by their shape wherever they are.
ENV_VALUE = "ghp_posENVVALUE0123456789abcdefghij"
TITLE = "xoxb-posTITLE-0123456789"
SECTION = "sk-posSECTION-0123456789abcdef"
ROUTINE_NAME = "AKIAPOSROUTINE012345"
PROMPT = "eyJposPROMPT0123.eyJ0123456789ab.sig0123456789"
TOKENS = {
    name: value
    for name, value in globals().items()
    if name.isupper() and isinstance(value, str) and ("pos" in value or "POS" in value)
}


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(manifest, home): the fleet applied, then every token planted by hand."""
    user = tmp_path / "user"
    user.mkdir()
    for key, value in {"HOME": str(user), "NO_COLOR": "1", "CRM": "crm-ref", "GH": "gh-ref"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HERMES_HOME", raising=False)
    home = tmp_path / "hermes"
    bot = {
        "name": "alpha",
        "title": "Alpha",
        "section": "Team",
        "model": {"provider": "custom", "default": "m1", "base_url": "https://llm.example.com/v1"},
        "env": {"PLAIN_SETTING": "v1"},
        "mcp_servers": {
            "crm": {"command": "npx", "args": ["-y", "@acme/crm"], "env": {"CRM_TOKEN": {"from_env": "CRM"}}},
            "gh": {"url": "https://mcp.example.com/mcp/", "headers": {"Authorization": {"from_env": "GH"}}},
        },
        "tts": {"provider": "elevenlabs", "elevenlabs": {"voice_id": "v1"}},
        "routines": [{"name": "Digest", "schedule": "0 9 * * *", "prompt": "Summarize"}],
    }
    manifest = write_fleet(tmp_path / "manifests", [bot], sections=[{"name": "Team"}])
    first = hermes_fleet("apply", "-f", manifest, "--home", home)
    assert first.code == 0, first.text
    plant(home, tmp_path)
    return manifest, home


def plant(home: Path, tmp_path: Path) -> None:
    profile = home / "profiles" / "alpha"
    yaml = YAML()
    config = yaml.load((profile / "config.yaml").read_text(encoding="utf-8"))
    crm, gh = config["mcp_servers"]["crm"], config["mcp_servers"]["gh"]
    crm["env"]["CRM_TOKEN"] = MCP_ENV
    crm["args"] = ["-y", "@acme/crm", f"--api-key={MCP_ARG_EQ}", "--token", MCP_ARG_NEXT]
    gh["headers"]["Authorization"] = MCP_HEADER
    gh["url"] = f"https://mcp.example.com/mcp/?key={MCP_URL_QUERY}"
    config["tts"]["elevenlabs"]["api_key"] = TTS_KEY
    config["model"]["base_url"] = f"https://user:{BASE_URL_USERINFO}@llm.example.com/v1"
    with (profile / "config.yaml").open("w", encoding="utf-8") as handle:
        yaml.dump(config, handle)
    env = (profile / ".env").read_text(encoding="utf-8").replace("PLAIN_SETTING=v1", f"PLAIN_SETTING={ENV_VALUE}")
    (profile / ".env").write_text(env, encoding="utf-8")
    meta_text = (profile / "profile.yaml").read_text(encoding="utf-8")
    (profile / "profile.yaml").write_text(
        meta_text.replace("title: Alpha", f"title: {TITLE}").replace("sectionName: Team", f"sectionName: {SECTION}"),
        encoding="utf-8",
    )
    jobs = json.loads((profile / "cron" / "jobs.json").read_text(encoding="utf-8"))
    jobs["jobs"][0]["name"] = f"[bot:alpha] Digest {ROUTINE_NAME}"
    jobs["jobs"][0]["prompt"] = f"Summarize with {PROMPT}"
    (profile / "cron" / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")


def link_soul_out(home: Path, tmp_path: Path) -> None:
    """SOUL.md a link to a file outside the home (plan refuses the bot, exit 3; export skips the file)."""
    profile = home / "profiles" / "alpha"
    outside = tmp_path / "outside-soul.md"
    outside.write_text(f"stolen {OUTSIDE_SOUL}\n", encoding="utf-8")
    soul = profile / "SOUL.md"
    if soul.exists():
        soul.unlink()
    soul.symlink_to(outside)


def leaks(label: str, text: str | bytes) -> list[str]:
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    return [f"{label}: {position}" for position, token in TOKENS.items() if token.encode() in data]


def run(*args: str | Path) -> Run:
    done = hermes_fleet(*args)
    assert "Traceback" not in done.text, done.text
    return done


def test_no_hand_written_credential_reaches_any_output(planted: tuple[Path, Path], tmp_path: Path) -> None:
    manifest, home = planted
    found: list[str] = []
    outputs = {
        "plan": run("plan", "-f", manifest, "--home", home),
        "plan json": run("plan", "-f", manifest, "--home", home, "-o", "json"),
        "dry-run json": run("apply", "-f", manifest, "--home", home, "--dry-run", "-o", "json"),
        "status": run("status", "-f", manifest, "--home", home),
        "status json": run("status", "-f", manifest, "--home", home, "-o", "json"),
        "export": run("export", "--home", home, "--no-rooms"),
        "export split": run("export", "--home", home, "--no-rooms", "--split", tmp_path / "split"),
        "export file": run("export", "--home", home, "--no-rooms", "-o", tmp_path / "single" / "fleet.yaml"),
        "watch --once": run("watch", "-f", manifest, "--home", home, "--once", "--no-rooms"),
    }
    link_soul_out(home, tmp_path)
    outputs["export soul link"] = run("export", "--home", home, "--no-rooms", "--split", tmp_path / "split-link")
    outputs["plan soul link"] = run("plan", "-f", manifest, "--home", home)
    (home / "profiles" / "alpha" / "SOUL.md").unlink()
    # The plan really shows the drifted values (masked), so the checks above looked at them.
    assert "config:mcp_servers.crm" in outputs["plan"].out and "meta:title" in outputs["plan"].out
    assert "--api-key=***" in outputs["plan"].out and "https://***@llm.example.com/v1" in outputs["plan"].out
    outputs["apply json"] = run("apply", "-f", manifest, "--home", home, "-o", "json")
    plant(home, tmp_path)
    outputs["apply"] = run("apply", "-f", manifest, "--home", home)
    plant(home, tmp_path)
    outputs["history"] = run("history", "--home", home)
    outputs["history json"] = run("history", "--home", home, "-o", "json")
    outputs["history show"] = run("history", "show", "2", "--home", home)
    outputs["history show json"] = run("history", "show", "2", "--home", home, "-o", "json")
    for label, done in outputs.items():
        assert done.code in (0, 1, 3, 4), f"{label}: {done.text}"
        found += leaks(label, done.out + done.err)
    # The state folder too (inventory, history, status), but not `replaced/`: the copies of the
    # home's own files an apply replaced, kept to undo it, hold what the home held.
    for folder in (tmp_path / "split", tmp_path / "split-link", tmp_path / "single", home / ".hermes-fleet"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and "replaced" not in path.relative_to(folder).parts:
                found += leaks(str(path.relative_to(tmp_path)), path.read_bytes())
    assert not found, "\n".join(found)


def test_export_lists_the_variables_and_skips_the_soul_link(planted: tuple[Path, Path], tmp_path: Path) -> None:
    _, home = planted
    link_soul_out(home, tmp_path)
    done = run("export", "--home", home, "--no-rooms", "--split", tmp_path / "split")
    assert done.code == 0, done.text
    bot = next(iter(YAML(typ="safe").load_all((tmp_path / "split" / "bots" / "alpha.yaml").read_text(encoding="utf-8"))))["spec"]
    crm = bot["mcp_servers"]["crm"]
    assert crm["env"]["CRM_TOKEN"] == {"from_env": "CRM_TOKEN"}
    assert crm["args"] == ["-y", "@acme/crm", "--api-key=${CRM_ARG_API_KEY}", "--token", "${CRM_ARG_TOKEN}"]
    assert bot["mcp_servers"]["gh"]["headers"]["Authorization"] == {"from_env": "GH_AUTHORIZATION"}
    assert bot["tts"]["elevenlabs"]["api_key"] == "${TTS_ELEVENLABS_API_KEY}"
    for name in ("CRM_ARG_API_KEY", "CRM_ARG_TOKEN", "TTS_ELEVENLABS_API_KEY", "PLAIN_SETTING"):
        assert bot["env"][name] == {"from_env": name}
        assert f"  {name}  (" in done.err
    assert "SOUL.md is a link out of the profile and was not read" in done.err
    assert not (tmp_path / "split" / "bots" / "souls").exists()


@pytest.mark.parametrize("rel", ["fleet.yaml", "bots/alpha.yaml", "bots"])
def test_export_split_never_writes_through_a_link(planted: tuple[Path, Path], tmp_path: Path, rel: str) -> None:
    _, home = planted
    split, victim = tmp_path / "split", tmp_path / "victim"
    (split / "bots").mkdir(parents=True) if rel != "bots" else split.mkdir()
    victim.mkdir()
    (victim / "alpha.yaml").write_text("keep me\n", encoding="utf-8")
    (victim / "fleet.yaml").write_text("keep me\n", encoding="utf-8")
    target = victim if rel == "bots" else victim / Path(rel).name
    os.symlink(target, split / rel)
    done = run("export", "--home", home, "--no-rooms", "--split", split)
    assert done.code == 3, done.text
    assert "export never writes through a link" in done.err
    assert (victim / "alpha.yaml").read_text(encoding="utf-8") == "keep me\n"
    assert (victim / "fleet.yaml").read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in victim.iterdir()) == ["alpha.yaml", "fleet.yaml"]


@pytest.mark.parametrize(
    ("where", "value", "shown"),
    [
        ("config:tts.elevenlabs", {"voice_id": "v", "api_key": "k1"}, {"voice_id": "v", "api_key": SECRET}),
        ("env:GITHUB_TOKEN", "k2", SECRET),
        ("config:x.apiKey", "k3", SECRET),
        ("config:x.max_tokens", 4096, 4096),
        ("config:x.api_key", "${NAME}", "${NAME}"),
        (
            "config:mcp_servers.s",
            {"env": {"REGION": "eu"}, "headers": {"X": "h"}},
            {"env": {"REGION": SECRET}, "headers": {"X": SECRET}},
        ),
        ("config:x.url", "https://u:p@h/?a=1", "https://***@h/?a=***"),
        ("meta:title", "Bearer abcdefgh12345", "Bearer ***"),
    ],
)
def test_the_masking_rule(where: str, value: Any, shown: Any) -> None:
    assert masked(value, where) == shown
    assert type(masked("(secret)", "meta:title")) is str  # a value that reads like the marker is not one


def test_mcp_args_and_token_shapes() -> None:
    assert mask_args(["--api-key=a1", "--token", "a2", "--region", "eu", "PASSWORD=a3"]) == [
        "--api-key=***",
        "--token",
        SECRET,
        "--region",
        "eu",
        "PASSWORD=***",
    ]
    for token in (SECTION, ENV_VALUE, TITLE, ROUTINE_NAME, PROMPT, "123456789:" + "A" * 35, "hf_" + "a" * 34):
        assert token not in mask_text(f"x {token} y"), token
    for word in ("sk-learn-tutorial-digest", "task-12345678901234567890", "gpt-4.1-mini", "09:00"):
        assert mask_text(word) == word
