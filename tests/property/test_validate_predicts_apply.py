"""Property: validate predicts apply, over the whole pipeline (the CLI, real files, a real home).

For every manifest of the grammar (manifest_grammar.py), applied to a fresh home or to a home
where another (calm, valid) fleet of the grammar was applied first: either `validate` exits 2,
and then `apply --adopt` exits 2 too and the home is byte-identical; or `validate` exits 0, and
then `apply --adopt` exits 0 and the next `plan --detailed-exitcode` is empty. No output ever
holds a traceback, and the secret value never appears in one.

CI runs a bounded budget (EXAMPLES, about a minute on 2 cores); `scripts/fuzz [N]` runs the same
property with a long one (HERMES_FLEET_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.integration.helpers import hermes_fleet, snapshot
from tests.property.manifest_grammar import SECRET_VALUE, SECRET_VAR, fleets, to_yaml

EXAMPLES = int(os.environ.get("HERMES_FLEET_FUZZ_EXAMPLES", "120"))
SEEN: dict[str, int] = {"valid": 0, "invalid": 0}


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VAR, SECRET_VALUE)
    for key in [k for k in os.environ if k.startswith("HERMES_") and k != "HERMES_FLEET_FUZZ_EXAMPLES"]:
        monkeypatch.delenv(key)


def clean(run: Any, what: str, text: str) -> None:
    assert "Traceback" not in run.text, f"{what} printed a traceback\n{text}\n{run.text}"
    assert SECRET_VALUE not in run.text, f"{what} printed the secret\n{run.text}"


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(doc=fleets(), base=st.one_of(st.none(), fleets(hostile=False)))
def test_validate_predicts_apply(doc: dict[str, Any], base: dict[str, Any] | None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="hf-predict-"))
    try:
        manifest = folder / "manifests" / "fleet.yaml"
        manifest.parent.mkdir()
        home = folder / "home"
        if base is not None:  # a home that already holds a fleet: the update path
            manifest.write_text(to_yaml(base) + "\n", encoding="utf-8")
            first = hermes_fleet("apply", "-f", manifest, "--home", home, "--adopt")
            clean(first, "the first apply", to_yaml(base))
            assume(first.code != 2)  # a calm fleet validation refused (a title collision...): no base
            assert first.code == 0, f"a valid base fleet did not apply\n{to_yaml(base)}\n{first.text}"
        before = snapshot(home)
        text = to_yaml(doc) + "\n"
        manifest.write_text(text, encoding="utf-8")

        validate = hermes_fleet("validate", "-f", manifest)
        clean(validate, "validate", text)
        assert validate.code in (0, 2), f"validate exit {validate.code}\n{text}\n{validate.text}"

        applied = hermes_fleet("apply", "-f", manifest, "--home", home, "--adopt")
        clean(applied, "apply", text)
        if validate.code == 2:
            SEEN["invalid"] += 1
            assert applied.code == 2, f"validate refused, apply exited {applied.code}\n{text}\n{applied.text}"
            assert snapshot(home) == before, "an invalid manifest changed the home"
            return
        SEEN["valid"] += 1
        assert applied.code == 0, f"validate passed, apply exited {applied.code}\n{text}\n{applied.text}"
        again = hermes_fleet("plan", "-f", manifest, "--home", home, "--detailed-exitcode")
        clean(again, "plan", text)
        assert again.code == 0, f"apply did not converge: the next plan is not empty\n{text}\n{again.text}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_grammar_reaches_both_outcomes() -> None:
    """A grammar that only ever fails validation proves nothing. In file order this runs after the
    property and reads its counts; run alone (`-k grammar`), it runs the property first."""
    if SEEN["valid"] + SEEN["invalid"] < EXAMPLES // 2:
        test_validate_predicts_apply()
    assert SEEN["valid"] >= EXAMPLES // 20, SEEN
    assert SEEN["invalid"] >= EXAMPLES // 20, SEEN
    print(f"validate predicts apply: {SEEN['valid']} valid and {SEEN['invalid']} invalid manifests")
