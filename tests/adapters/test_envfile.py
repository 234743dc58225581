"""EnvFile: round trips, Hermes-identical line format, and the real Hermes 0.19 loader."""

from __future__ import annotations

import json
import stat
from importlib.metadata import version
from pathlib import Path

import pytest

from controller.adapters import envfile
from controller.adapters.envfile import EnvFile, read_env, write_env
from controller.errors import HermesStateError, RefusedValue
from controller.hermes.env import PROFILE_ENV_HEADER
from tests.adapters.conftest import RealHermes

# Values that exercise every quoting rule of save_env_value and python-dotenv's parser.
TRICKY = {
    "PLAIN": "sk-or-v1-0123456789abcdef",
    "EMPTY": "",
    "SPACE": "two words",
    "LEADING": "  lead",
    "TRAILING": "trail  ",
    "HASH": "a#b",
    "HASH_START": "#start",
    "DQUOTE": 'say "hi"',
    "SQUOTE": "it's",
    "BACKSLASH": "back\\slash",
    "BACKSLASH_SPACE": "C:\\Program Files\\x",
    "ESCAPED_QUOTE": 'a \\" b',
    "TRAILING_BACKSLASH": "ends-with\\",
    "LONE_BACKSLASH": "\\",
    "LITERAL_NL": "line\\nnext word",
    "TAB": "tab\there",
    "VTAB": "v\x0bt",
    "UNICODE_WORD": "équipe très bien",
    "URL": "https://hook.example/x?API_KEY=abc&y=1",
    "EQUALS": "a=b=c",
    "DOLLAR": "$HOME is not braces",
    "SINGLE_QUOTED": "'single'",
    "LONG": "x" * 400,
    "BASE64": "dGVzdA==",
}


# --- unit tests ---------------------------------------------------------------------------------

ROUND_TRIP = (
    "# header comment\n"
    "\n"
    "OPENROUTER_API_KEY=sk-1\n"
    "export EXPORTED=yes\n"
    "   \n"
    "UNKNOWN_KEY='single quoted'  # trailing comment\n"
    'MULTI="first\nsecond"\n'
    "weird line without equals\n"
    "SPACED = value with spaces # comment\n"
    "CRLF=1\r\n"
    "LAST=no-newline"
)


def test_round_trip_keeps_every_byte():
    assert EnvFile.parse(ROUND_TRIP).render() == ROUND_TRIP
    assert EnvFile.parse(PROFILE_ENV_HEADER).render() == PROFILE_ENV_HEADER


def test_get_reads_like_python_dotenv():
    env = EnvFile.parse(ROUND_TRIP)
    assert env.get("OPENROUTER_API_KEY") == "sk-1"
    assert env.get("EXPORTED") == "yes"
    assert env.get("UNKNOWN_KEY") == "single quoted"
    assert env.get("MULTI") == "first\nsecond"
    assert env.get("SPACED") == "value with spaces"
    assert env.get("CRLF") == "1"
    assert env.get("LAST") == "no-newline"
    assert env.get("weird") is None
    assert env.get("MISSING") is None
    assert env.keys() == ["OPENROUTER_API_KEY", "EXPORTED", "UNKNOWN_KEY", "MULTI", "SPACED", "CRLF", "LAST"]


def test_get_escapes_and_duplicates():
    env = EnvFile.parse("A=\"x\\ty\\\"z\\\\\"\nB='q\\'s'\nA=second\nC\n")
    assert env.get("A") == "second"  # dotenv: the last binding wins
    assert env.get("B") == "q's"
    assert env.get("C") is None
    assert EnvFile.parse('A="x\\ty\\"z\\\\"\n').get("A") == 'x\ty"z\\'


def test_set_replaces_in_place_and_appends():
    env = EnvFile.parse("# c\nA=1\nB=2\n\nC=3")
    assert env.set("B", "two words") is True
    assert env.set("D", "4") is True
    assert env.render() == '# c\nA=1\nB="two words"\n\nC=3\nD=4\n'
    assert env.set("B", "two words") is False


def test_set_matches_export_and_drops_later_duplicates():
    env = EnvFile.parse("export A=1\nB=2\nA=3\n")
    env.set("A", "new")
    assert env.render() == "A=new\nB=2\n"
    assert env.get("A") == "new"


def test_remove():
    env = EnvFile.parse("A=1\nB=2\nexport A=3\n")
    assert env.remove("A") is True
    assert env.render() == "B=2\n"
    assert env.remove("A") is False


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("abc", "K=abc"),
        ("", "K="),
        ("a b", 'K="a b"'),
        (" a", 'K=" a"'),
        ("a#b", 'K="a#b"'),
        ('a"b', 'K="a\\"b"'),
        ("a'b", 'K="a\'b"'),
        ("a\\b", "K=a\\b"),
        ("a\\ b", 'K="a\\\\ b"'),
        ("a\tb", 'K="a\tb"'),
        ("a=b", "K=a=b"),
    ],
)
def test_quoting(value, line):
    assert envfile.format_line("K", value) == line
    assert EnvFile.parse(line + "\n").get("K") == value


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("K", "a\nb", "line break"),
        ("K", "a\rb", "line break"),
        ("K", "a\x00b", "NUL"),
        ("K", "${HOME}/x", "expand"),
        ("K", "abcOPENAI_API_KEY=x", "split"),
        ("K", "quoted and ends with \\", "backslash"),
        ("PATH", "/bin", "may not be set"),
        ("1BAD", "x", "invalid"),
        ("my-key", "x", "invalid"),
        ("OPENAI_API_KEY", "sk-é", "non-ASCII"),
    ],
)
def test_refused_values(key, value, reason):
    with pytest.raises(RefusedValue, match=reason):
        EnvFile().set(key, value)


def test_structured_value_with_embedded_key_is_allowed():
    env = EnvFile()
    env.set("WEBHOOK_URL", "https://x.example/?API_KEY=abc")
    assert env.get("WEBHOOK_URL") == "https://x.example/?API_KEY=abc"


def test_read_write_modes(tmp_path: Path):
    path = tmp_path / ".env"
    assert read_env(path).render() == ""
    env = EnvFile.parse(PROFILE_ENV_HEADER)
    env.set("A", "1")
    write_env(path, env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_env(path).get("A") == "1"
    path.chmod(0o640)
    env.set("A", "2")
    write_env(path, env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.read_text() == PROFILE_ENV_HEADER + "A=2\n"


def test_non_utf8_file_is_a_state_error(tmp_path: Path):
    path = tmp_path / ".env"
    path.write_bytes(b"\xff\xfeA\x00=\x001\x00")
    with pytest.raises(HermesStateError):
        read_env(path)


# --- the real Hermes ----------------------------------------------------------------------------


@pytest.mark.hermes
def test_profile_create_writes_our_header(real_hermes: RealHermes):
    profile = real_hermes.create_profile("hdr")
    assert (profile / ".env").read_text() == PROFILE_ENV_HEADER


@pytest.mark.hermes
def test_lines_equal_save_env_value_output(real_hermes: RealHermes, tmp_path: Path):
    """Hermes' own save_env_value writes, into a fresh .env, exactly the bytes our writer writes.

    Non-ASCII values are left out: save_env_value strips non-ASCII from every value it writes,
    while Hermes' loader reads them fine; we keep them (except for credentials, which we refuse).
    """
    values = {k: v for k, v in TRICKY.items() if v.isascii()}
    home = tmp_path / "writer-home"
    home.mkdir()
    (home / ".env").write_text(PROFILE_ENV_HEADER)
    (home / ".env").chmod(0o600)
    code = (
        "import json, sys\n"
        "from hermes_cli.config import save_env_value\n"
        "for k, v in json.load(sys.stdin).items():\n"
        "    save_env_value(k, v)\n"
    )
    real_hermes.python(code, home, stdin=json.dumps(values))
    ours = EnvFile.parse(PROFILE_ENV_HEADER)
    for key, value in values.items():
        ours.set(key, value)
    assert (home / ".env").read_text(encoding="utf-8") == ours.render()


@pytest.mark.hermes
def test_hermes_loads_our_file_unchanged_and_reads_every_value(real_hermes: RealHermes):
    profile = real_hermes.create_profile("envbot")
    env = read_env(profile / ".env")
    for key, value in TRICKY.items():
        env.set(key, value)
    write_env(profile / ".env", env)
    before = (profile / ".env").read_bytes()

    # Any CLI command runs load_hermes_dotenv, which rewrites a "dirty" file.
    real_hermes.run("config", "path", profile="envbot")
    assert (profile / ".env").read_bytes() == before, "Hermes' sanitiser rewrote our .env"

    code = (
        "import json, os\n"
        "from hermes_cli.env_loader import load_hermes_dotenv\n"
        "from hermes_cli.config import load_env\n"
        "keys = json.loads(input())\n"
        "load_hermes_dotenv(hermes_home=os.environ['HERMES_HOME'])\n"
        "own = load_env()\n"
        "print(json.dumps({'environ': {k: os.environ.get(k) for k in keys},"
        " 'load_env': {k: own.get(k) for k in keys}}))\n"
    )
    seen = json.loads(real_hermes.python(code, profile, stdin=json.dumps(list(TRICKY))))
    assert (profile / ".env").read_bytes() == before
    for key, value in TRICKY.items():
        assert seen["environ"][key] == value, f"python-dotenv read {key} differently"
        assert seen["load_env"][key] == value, f"Hermes' load_env read {key} differently"


@pytest.mark.hermes
def test_get_agrees_with_python_dotenv_on_hand_written_lines(real_hermes: RealHermes, tmp_path: Path):
    text = (
        ROUND_TRIP
        + "\nQ1='a\\'b'\nQ2=\"tab\\there\\u0041\"\nQ3=bare # comment\nQ4 =  x  \n"
        + "'QK'=quoted-key\nQ5=\"unterminated\nQ6=after\n"
        + 'Q7="ends \\\\"\nQ8=swallowed"\nQ9=1\n'
    )
    path = tmp_path / "hand.env"
    path.write_text(text)
    code = (
        "import json, sys\n"
        "from dotenv import dotenv_values\n"
        "print(json.dumps(dotenv_values(sys.stdin.readline().strip(), interpolate=False)))\n"
    )
    theirs = json.loads(real_hermes.python(code, tmp_path, stdin=str(path) + "\n"))
    ours = EnvFile.parse(text)
    assert {k: ours.get(k) for k in theirs} == theirs
    assert set(ours.keys()) == {k for k, v in theirs.items() if v is not None}


@pytest.mark.hermes
def test_embedded_key_guard_covers_every_known_hermes_key(real_hermes: RealHermes, tmp_path: Path):
    code = (
        "import json\n"
        "from hermes_cli.config import OPTIONAL_ENV_VARS, _EXTRA_ENV_KEYS\n"
        "print(json.dumps(sorted(set(OPTIONAL_ENV_VARS) | set(_EXTRA_ENV_KEYS))))\n"
    )
    known = json.loads(real_hermes.python(code, tmp_path))
    assert len(known) > 100
    for key in known:
        with pytest.raises(RefusedValue, match="split"):
            envfile.check_entry("OPENAI_API_KEY", f"sk-abc{key}=zzz")


# Hand-written lines, one rule of python-dotenv 1.2.2's grammar each (dotenv/parser.py), none of
# which Hermes' start-up sanitiser rewrites (no whitespace around a line, a final newline).
HAND_WRITTEN = (
    "# a comment line\n"
    "export EXPORTED=yes\n"
    "export\tEXPORT_TAB=tab\n"
    "SQ='single $quoted # not a comment'\n"
    "SQ_ESCAPES='it\\'s a \\\\ backslash, \\n stays'\n"
    'DQ="double \\"quoted\\" \\\\ \\t tab \\n newline \\u00e9"\n'
    "BARE=bare value # inline comment\n"
    "BARE_HASH=a#b\n"
    "EQ_SPACES = spaced\n"
    "EMPTY=\n"
    "EMPTY_COMMENT= # only a comment\n"
    "NO_EQUALS\n"
    "'QUOTED_KEY'=quoted key\n"
    'MULTI_DQ="first\nsecond # kept"\n'
    "MULTI_SQ='one\n#two'\n"
    "DUP=first\n"
    "this line is not a binding\n"
    "AFTER_BAD=still read\n"
    "DUP=second\n"
    "CRLF=crlf\r\n"
    'DQ_TRAILING_BACKSLASH="ends \\\\"\n'
    'SWALLOWED=into the value above"\n'
    "LAST=x\n"
)

# Hermes' own load: the sanitiser, then python-dotenv over the profile's .env, override=True.
_HERMES_LOADS = (
    "import json, os\n"
    "from hermes_cli.env_loader import load_hermes_dotenv\n"
    "before = dict(os.environ)\n"
    "load_hermes_dotenv(hermes_home=os.environ['HERMES_HOME'])\n"
    "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))\n"
)


def test_a_line_dotenv_cannot_parse_sets_nothing_and_prints_nothing(capsys):
    env = EnvFile.parse("A=1\nnot a binding\nB=2\n")
    assert env.as_dict() == {"A": "1", "B": "2"}
    assert env.render() == "A=1\nnot a binding\nB=2\n"
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")  # dotenv's warning names no file: kept off our stderr


def test_edits_keep_the_blank_lines_before_a_binding():
    env = EnvFile.parse("A=1\n\n\nB=2\n\n")
    env.set("B", "3")
    assert env.render() == "A=1\n\n\nB=3\n\n"
    env.remove("B")
    assert env.render() == "A=1\n\n\n\n"
    assert env.as_dict() == {"A": "1"}


@pytest.mark.hermes
def test_reading_is_hermes_own_on_hand_written_lines(real_hermes: RealHermes, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_bytes(HAND_WRITTEN.encode())
    theirs = json.loads(real_hermes.python(_HERMES_LOADS, home))
    assert (home / ".env").read_bytes() == HAND_WRITTEN.encode(), "the sanitiser rewrote the file"
    ours = read_env(home / ".env").as_dict()
    assert ours == theirs
    # The lines whose reading is not obvious, spelled out (python-dotenv 1.2.2).
    assert ours["EMPTY_COMMENT"] == "# only a comment"  # 1.2.4 reads ""
    assert ours["DQ_TRAILING_BACKSLASH"] == 'ends \\"\nSWALLOWED=into the value above'
    assert ours["MULTI_DQ"] == "first\nsecond # kept"
    assert ours["DUP"] == "second"
    assert "NO_EQUALS" not in ours and "this" not in ours


@pytest.mark.hermes
def test_a_file_the_sanitiser_rewrites_is_read_as_hermes_reads_it_afterwards(real_hermes: RealHermes, tmp_path: Path):
    # docs/hermes/files.md#env-rewrites: every line is stripped, even inside a quoted value.
    text = '  INDENTED=x\t\nMULTI="a  \n   b"\nPLAIN=p'
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text(text)
    before = read_env(home / ".env").as_dict()
    theirs = json.loads(real_hermes.python(_HERMES_LOADS, home))
    assert (home / ".env").read_text() == 'INDENTED=x\nMULTI="a\nb"\nPLAIN=p\n'
    assert read_env(home / ".env").as_dict() == theirs
    assert {k: v for k, v in before.items() if theirs.get(k) != v} == {"MULTI": "a  \n   b"}


@pytest.mark.hermes
def test_python_dotenv_is_the_version_hermes_reads_with(real_hermes: RealHermes, tmp_path: Path):
    code = "from importlib.metadata import version\nprint(version('python-dotenv'))\n"
    assert real_hermes.python(code, tmp_path).strip() == version("python-dotenv") == "1.2.2"
