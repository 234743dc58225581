"""Credentials in URLs are masked wherever a URL is shown; names on the command line follow the
rules of names in manifests (a trailing newline, a path, a space: exit 2, nothing created)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller import errors
from controller.adapters import gateway
from controller.redact import redact_text, redact_url
from tests.integration.helpers import hermes_fleet, write_fleet


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://ghp_TOKEN@github.com/acme/fleet.git", "https://***@github.com/acme/fleet.git"),
        ("https://user:pass@host:8443/x.git", "https://***@host:8443/x.git"),
        ("http://h/x?access_token=abc&ref=main", "http://h/x?access_token=***&ref=***"),
        ("ws://127.0.0.1:9119/api/ws?token=t0k", "ws://127.0.0.1:9119/api/ws?token=***"),
        ("ssh://git@host/fleet.git", "ssh://git@host/fleet.git"),  # a user name, no secret
        ("ssh://git:pw@host/fleet.git", "ssh://***@host/fleet.git"),
        ("git@github.com:acme/fleet.git", "git@github.com:acme/fleet.git"),
        ("file:///srv/fleet.git", "file:///srv/fleet.git"),
        ("/srv/fleet", "/srv/fleet"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_masks_every_url_inside_a_message() -> None:
    text = "fatal: unable to access 'https://u:SECRET@h/r.git/': 403; also http://T@x/y"
    assert redact_text(text) == "fatal: unable to access 'https://***@h/r.git/': 403; also http://***@x/y"


def test_gateway_errors_never_show_a_credential_in_the_url() -> None:
    error = gateway.classify(OSError(111, "Connection refused to ws://u:SECRET@127.0.0.1:1/api/ws"))
    assert "SECRET" not in str(error) and "***@127.0.0.1" in str(error)
    with pytest.raises(errors.GatewayIncompatible) as caught:
        gateway.ws_url("ftp://u:SECRET@host")
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize("name", ["acme\n", "../x", "Acme", "a b", ""])
@pytest.mark.parametrize("verb", ["validate", "plan", "apply", "status", "watch", "export"])
def test_a_fleet_name_on_the_command_line_follows_the_manifest_rule(tmp_path: Path, verb: str, name: str) -> None:
    manifest = write_fleet(tmp_path / "m", [{"name": "alpha"}])
    home = tmp_path / "home"
    home.mkdir()
    argv = {
        "validate": ["validate", "-f", manifest],
        "plan": ["plan", "-f", manifest, "--home", home],
        "apply": ["apply", "-f", manifest, "--home", home],
        "status": ["status", "--home", home],
        "watch": ["watch", "--once", "-f", manifest, "--home", home],
        "export": ["export", "--home", home],
    }[verb]
    run = hermes_fleet(*argv, "--fleet", name)
    assert run.code == 2, run.text
    assert "Traceback" not in run.text
    assert os.listdir(home) == [], "a bad name created something"


@pytest.mark.parametrize("host", ["node\n", "a b", ".x", "x/y", ""])
def test_a_host_name_on_the_command_line_follows_the_manifest_rule(tmp_path: Path, host: str) -> None:
    manifest = write_fleet(tmp_path / "m", [{"name": "alpha", "host": "node1"}])
    home = tmp_path / "home"
    for argv in (["plan", "-f", manifest], ["apply", "-f", manifest], ["watch", "--once", "-f", manifest]):
        run = hermes_fleet(*argv, "--home", home, "--host", host)
        assert run.code == 2 and "is not a valid host name" in run.text, run.text
    assert not home.exists()


def test_a_credential_a_person_put_in_a_live_url_is_masked_in_plans(tmp_path: Path) -> None:
    """Manifests cannot carry one (validation refuses it); a hand edit of config.yaml can, and a plan
    shows the live value as the old side of a change."""
    manifest = write_fleet(tmp_path / "m", [{"name": "alpha", "mcp_servers": {"docs": {"url": "https://mcp.example/sse"}}}])
    home = tmp_path / "home"
    assert hermes_fleet("apply", "-f", manifest, "--home", home).code == 0
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("https://mcp.example/sse", "https://u:SECRET@mcp.example/sse?api_key=SECRET2"))
    for output in ("text", "json"):
        run = hermes_fleet("plan", "-f", manifest, "--home", home, "-o", output)
        assert run.code == 0 and "mcp_servers" in run.out, run.text
        assert "SECRET" not in run.text and "***@mcp.example" in run.out, run.out


def test_a_long_line_with_a_url_is_masked_without_recursion_or_quadratic_time() -> None:
    """One line of 4096+ characters was split into itself forever (RecursionError in every verb's
    output); a long run of letters before `://` made the pattern quadratic (51 s for 200 KB)."""
    import time

    from controller.redact import redact_text

    line = "see https://u:pw@example.com/x?token=abc " + "word " * 3000
    masked = redact_text(line)
    assert "pw@" not in masked and "token=abc" not in masked and len(masked) < len(line)
    begun = time.monotonic()
    masked = redact_text("x" * 200_000 + "https://u:p@a.b/?k=v")
    assert "u:p@" not in masked and "k=v" not in masked
    assert time.monotonic() - begun < 5  # linear: about 0.02 s here
