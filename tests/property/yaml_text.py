"""Shared hypothesis pieces for the loader's property tests (the fast constructor, the fast
event path): their settings and the plain values they dump as YAML and read back."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Plain data a manifest could hold: what dumping it as YAML and loading it back must give again.
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)
