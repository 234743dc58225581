"""Hermes naming rules: profile names, @-mention forms from titles, peer env keys, secret-shaped keys."""

from __future__ import annotations

import pytest

from controller.hermes import DEFAULT_PROFILE, naming


@pytest.mark.parametrize("name", ["a", "0", "researcher", "my_bot-2", "a" * 64, "default", "hermes"])
def test_valid_profile_names(name: str) -> None:
    assert naming.profile_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        pytest.param("Researcher", "write 'researcher'", id="upper"),
        pytest.param(" bot", "write 'bot'", id="leading-space"),
        pytest.param("bot ", "write 'bot'", id="trailing-space"),
        pytest.param("", "1-64 characters", id="empty"),
        pytest.param("-bot", "starting with a letter or digit", id="leading-dash"),
        pytest.param("_bot", "starting with a letter or digit", id="leading-underscore"),
        pytest.param("a" * 65, "1-64 characters", id="too-long"),
        pytest.param("my.bot", "^[a-z0-9][a-z0-9_-]{0,63}$", id="dot"),
        pytest.param("my/bot", "^[a-z0-9][a-z0-9_-]{0,63}$", id="slash"),
        pytest.param("bøt", "^[a-z0-9][a-z0-9_-]{0,63}$", id="non-ascii"),
    ],
)
def test_invalid_profile_names_say_why(name: str, fragment: str) -> None:
    problem = naming.profile_name_problem(name)
    assert problem is not None and fragment in problem


def test_reserved_names_are_the_ones_hermes_refuses() -> None:
    assert {"hermes", "default", "test", "tmp", "root", "sudo"} == naming.RESERVED_PROFILE_NAMES
    assert DEFAULT_PROFILE == "default"


@pytest.mark.parametrize(
    ("title", "forms"),
    [
        pytest.param("Research Buddy", ["research-buddy", "researchbuddy"], id="two-words"),
        pytest.param("Writer", ["writer"], id="one-word"),
        pytest.param("  Dr. Who?! ", ["dr-who", "drwho"], id="punctuation"),
        pytest.param("code_review-bot", ["code_review-bot"], id="already-a-tag"),
        pytest.param("Éclair Bot", ["clair-bot", "clairbot"], id="non-ascii-dropped"),
        pytest.param("Everyone", [], id="reserved-everyone"),
        pytest.param("All", [], id="reserved-all"),
        pytest.param("Hermes", [], id="reserved-hermes"),
        pytest.param("!!!", [], id="nothing-left"),
        pytest.param("", [], id="empty"),
        pytest.param("-x-", ["x"], id="dashes-trimmed"),
    ],
)
def test_mention_forms_of_a_title(title: str, forms: list[str]) -> None:
    assert naming.mention_forms(title) == forms


@pytest.mark.parametrize(
    ("peer", "key"),
    [
        ("spark", "HERMES_PEER_SPARK_KEY"),
        ("my-box", "HERMES_PEER_MY_BOX_KEY"),
        ("gpu_2", "HERMES_PEER_GPU_2_KEY"),
    ],
)
def test_peer_env_key(peer: str, key: str) -> None:
    assert naming.peer_env_key(peer) == key


@pytest.mark.parametrize(
    "key",
    [
        "OPENAI_API_KEY",
        "API_SERVER_KEY",
        "GITHUB_TOKEN",
        "SLACK_BOT_TOKEN",
        "CLIENT_SECRET",
        "SECRET_SAUCE",
        "DB_PASSWORD",
        "SMTP_PASSWD",
        "GITLAB_PAT",
        "GOOGLE_CREDENTIALS",
        "AUTHORIZATION",
        "api_key",
        "apikey",
        "x-api-key",
        "my.app.token",
        "PASSWORD_FILE_HINT",
    ],
)
def test_secret_shaped_keys(key: str) -> None:
    assert naming.is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "LOG_LEVEL",
        "max_tokens",
        "KEYBOARD_LAYOUT",
        "TOKENIZERS_PARALLELISM",
        "KEY_ID_PREFIX",
        "timezone",
        "",
        "___",
    ],
)
def test_ordinary_keys_are_not_secret(key: str) -> None:
    assert not naming.is_secret_key(key)
