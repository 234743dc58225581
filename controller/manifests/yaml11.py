"""Pieces of config.yaml read as Hermes reads config.yaml: an unquoted yes/no/on/off is a boolean.

Manifests are YAML 1.2, where those words are strings; Hermes loads config.yaml with PyYAML
(YAML 1.1), where they are booleans (docs/hermes/vocabulary.md#yaml-11-words). A `config:` block
(and a `tts` provider block) is written into config.yaml as it stands, so its unquoted words get
Hermes' meaning: `show_reasoning: off` is off, as it would be in config.yaml. A quoted `'off'`
stays the string. Done on the loaded document before validation, so the plan, the written file
and the apply history all see the boolean.
"""

from __future__ import annotations

from typing import Any

from controller.manifests.loading import Document, Yaml11Word


def give_hermes_meaning(doc: Document) -> None:
    """Turn the YAML 1.1 words of `doc`'s pieces of config.yaml (each `config:` block and `tts`
    provider block) into booleans, in place. Everywhere else a typed field takes the word, and
    pydantic makes it a plain string."""
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    if not isinstance(spec, dict):
        return
    blocks = [spec, spec.get("defaults")]
    bots = spec.get("bots")
    if isinstance(bots, list):
        blocks.extend(bots)
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("config"), dict):
            _convert(block["config"])
        if isinstance(block.get("tts"), dict):
            _convert(block["tts"])


def _convert(node: dict[str, Any] | list[Any]) -> None:
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if value.__class__ is Yaml11Word:
            node[key] = value.boolean  # type: ignore[index]  # a new value for a key: the dict keeps its size
        elif value.__class__ is dict or value.__class__ is list:
            _convert(value)
