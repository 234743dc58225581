"""JSON Schema of the manifest format, generated from the pydantic models.

`schemas/` holds the committed output of `hermes-fleet schema` (one file for any document, one
per kind); tests/test_schema.py fails when those files are stale. Regenerate with
`python -m controller.manifests.schema --write`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from controller.manifests.models import KINDS, AnyDocument

SCHEMA_ID = "https://hermes-fleet.dev/schemas/v1/hermes-fleet.json"
SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


def document_schema(kind: str | None = None) -> dict[str, Any]:
    from controller.manifests.validating import DOCUMENT_CLASSES

    if kind is None:
        schema = TypeAdapter(AnyDocument).json_schema()
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_ID,
            "title": "hermes-fleet manifest document",
            **schema,
        }
        return schema
    if kind not in DOCUMENT_CLASSES:
        from controller.errors import UsageError

        raise UsageError(f"unknown kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    schema = DOCUMENT_CLASSES[kind].model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID.replace("hermes-fleet.json", f"{kind.lower()}.json"),
        **schema,
    }


def rendered_files() -> dict[str, str]:
    """File name -> content for everything under schemas/."""
    files = {"hermes-fleet.json": document_schema(None)}
    files.update({f"{kind.lower()}.json": document_schema(kind) for kind in KINDS})
    return {name: json.dumps(body, indent=2, sort_keys=False) + "\n" for name, body in files.items()}


def write_all(folder: Path = SCHEMAS_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered_files().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    if "--write" in sys.argv:
        for path in write_all():
            print(path)
    else:
        print(json.dumps(document_schema(None), indent=2))
