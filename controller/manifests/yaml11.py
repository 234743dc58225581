"""`config:` values read as Hermes reads its config.yaml: an unquoted yes/no/on/off is a boolean.

Manifests are YAML 1.2, where those words are strings; Hermes loads config.yaml with PyYAML
(YAML 1.1), where they are booleans (docs/hermes/vocabulary.md#yaml-11-words). A `config:` block
is a piece of config.yaml, so its unquoted words get Hermes' meaning: `show_reasoning: off` is
off, as it would be in config.yaml. A quoted `'off'` stays the string. Done on the loaded
document before validation, so the plan, the written file and the apply history all see the
boolean.
"""

from __future__ import annotations

from typing import Any

from controller.manifests.loading import Document, Yaml11Word


def give_hermes_meaning(doc: Document) -> None:
    """Turn the YAML 1.1 words of each `config:` block of `doc` into booleans, in place."""
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    if not isinstance(spec, dict):
        return
    blocks = [spec, spec.get("defaults")]
    bots = spec.get("bots")
    if isinstance(bots, list):
        blocks.extend(bots)
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("config"), dict):
            _convert(block["config"])


def _convert(node: dict[str, Any] | list[Any]) -> None:
    keys = node.keys() if isinstance(node, dict) else range(len(node))
    for key in keys:
        value = node[key]  # type: ignore[index]
        if isinstance(value, Yaml11Word):
            node[key] = value.boolean  # type: ignore[index]
        elif isinstance(value, dict | list):
            _convert(value)
