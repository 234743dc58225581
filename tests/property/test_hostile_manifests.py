"""Property: whatever bytes or structures arrive, `validate` answers 0 or 2 with located
diagnostics, and never raises."""

from __future__ import annotations

import io
import json
import re
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import cli

FIELDS = [
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "name",
    "fleet",
    "bots",
    "sections",
    "rooms",
    "peers",
    "routines",
    "schedule",
    "prompt",
    "members",
    "who_answers",
    "title",
    "env",
    "config",
    "soul_file",
    "url",
    "key",
    "from_env",
    "from_file",
    "model",
    "defaults",
    "gateway",
    "avatar",
    "section",
    "<<",
    "x",
]
VALUES = [
    "hermes-fleet/v1",
    "Fleet",
    "Bot",
    "Room",
    "Routine",
    "Peer",
    "Policy",
    "Section",
    "acme",
    "default",
    "every 1m",
    "@daily",
    "0 8 * * MON",
    "../../etc/passwd",
    "lead:x",
    "http://p",
    "ftp://x",
    "sk-1",
    "Research Buddy",
    "spark/x",
    "",
]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def diagnostic_line(file: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(file)}(:\d+:\d+)?: (error|warning): ")


def run_validate(content: bytes, output: str = "text") -> tuple[int, str, str, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.yaml"
        path.write_bytes(content)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(["--color", "never", "validate", "-f", str(path), "-o", output])
        return code, out.getvalue(), err.getvalue(), str(path)


def assert_well_formed(code: int, out: str, err: str, file: str) -> None:
    assert code in (0, 2)
    assert "Traceback" not in out + err
    pattern = diagnostic_line(file)
    for line in (out + err).splitlines():
        if ": error: " in line or ": warning: " in line:
            assert pattern.match(line), line
    if code == 2:
        assert "invalid" in out.splitlines()[-1]


yamlish = st.lists(
    st.sampled_from(
        [
            *" \t\n:-[]{},&*!|>'\"#%@`?~.0aZ_",
            "apiVersion: ",
            "kind: ",
            "hermes-fleet/v1",
            "\n---\n",
            "Fleet",
            "&a ",
            "*a",
            "!!python/name:os.system ",
            "metadata:\n  name: acme\n",
            "\xff",
            "\x00",
            "  ",
        ]
    ),
    max_size=80,
).map("".join)


@SETTINGS
@given(text=yamlish)
def test_random_yaml_ish_text_never_raises(text: str) -> None:
    assert_well_formed(*run_validate(text.encode()))


@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes_never_raise(data: bytes) -> None:
    assert_well_formed(*run_validate(data))


scalars = st.one_of(
    st.sampled_from(VALUES),
    st.integers(-5, 100),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
keys = st.one_of(st.sampled_from(FIELDS), st.text(min_size=1, max_size=10))
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
envelopes = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["hermes-fleet/v1", "hermes-fleet/v1", "v2"]),
        "kind": st.sampled_from(["Fleet", "Bot", "Section", "Room", "Routine", "Peer", "Policy", "Flet"]),
        "metadata": st.fixed_dictionaries(
            {"name": st.sampled_from(VALUES)}, optional={"fleet": st.sampled_from(["acme", "other", "Bad"])}
        ),
    },
    optional={"spec": st.dictionaries(st.sampled_from(FIELDS), structures, max_size=6)},
)


@SETTINGS
@given(documents=st.lists(st.one_of(envelopes, structures), min_size=1, max_size=4))
def test_random_structures_dumped_as_yaml_documents_never_raise(documents: list[object]) -> None:
    text = "\n---\n".join(json.dumps(d, indent=1) for d in documents)  # JSON is YAML 1.2
    assert_well_formed(*run_validate(text.encode()))


@SETTINGS
@given(documents=st.lists(envelopes, min_size=1, max_size=3), output=st.sampled_from(["json", "github", "junit"]))
def test_machine_outputs_never_raise(documents: list[object], output: str) -> None:
    text = "\n---\n".join(json.dumps(d) for d in documents)
    code, out, err, _ = run_validate(text.encode(), output)
    assert code in (0, 2)
    assert "Traceback" not in out + err
    if output == "json":
        assert json.loads(out)["valid"] is (code == 0)
