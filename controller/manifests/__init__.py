"""Manifests: finding, parsing and validating them, and the desired state they describe.

loading (YAML with locations) -> models (pydantic, one per kind) -> validating (schema errors and
semantic rules) -> desired (the normalised DesiredState every later stage uses). `references`
resolves secret references; it is the only module here that reads values outside the manifests.
"""
