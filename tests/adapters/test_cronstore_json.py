"""cronstore.dumps_indented writes exactly what `json.dumps(indent=2, ensure_ascii=False)` writes.

hermes-fleet writes `cron/jobs.json` indented by 2 as Hermes 0.19.0 does
(docs/hermes/cron.md#store-and-lock; non-ASCII unescaped, which Hermes reads the same), so the
fast encoder is checked byte for byte against the json module.
"""

from __future__ import annotations

import enum
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.adapters import cronstore

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)  # any code point: quotes, backslashes, controls, non-ASCII, surrogates
)
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=30
)


@settings(max_examples=2000, deadline=None)
@given(documents)
def test_the_fast_encoder_writes_what_json_writes(data: object) -> None:
    assert cronstore.dumps_indented(data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_what_is_not_json_s_own_type_goes_to_json_itself() -> None:
    class Level(enum.IntEnum):
        HIGH = 2

    odd = {"a": [Level.HIGH, (1, 2)], 3: math.inf, True: None}
    assert cronstore.dumps_indented(odd) == json.dumps(odd, indent=2, ensure_ascii=False)


def test_a_real_store_reads_back_the_same() -> None:
    store = {
        "jobs": [{"id": "2f7282a00f0d", "name": "[bot:b] Digest", "skills": [], "repeat": {"times": None, "completed": 0},
                  "schedule": {"kind": "cron", "expr": "0 8 * * 1-5", "display": "0 8 * * 1-5"}, "enabled": True}],
        "updated_at": "2026-12-02T01:00:00+00:00",
    }  # fmt: skip
    text = cronstore.dumps_indented(store)
    assert text == json.dumps(store, indent=2, ensure_ascii=False) and json.loads(text) == store
