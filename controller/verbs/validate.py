"""`validate` (offline checks, four output formats) and `schema` (the JSON Schema)."""

from __future__ import annotations

import argparse
import json
import sys

from controller.errors import ExitCode
from controller.manifests import schema
from controller.verbs import common, reporting


def cmd_validate(args: argparse.Namespace) -> int:
    result = common.load(args)
    strict = args.strict
    if args.output == "json":
        text = reporting.validation_json(result, strict=strict)
    elif args.output == "github":
        text = reporting.validation_github(result, strict=strict)
    elif args.output == "junit":
        text = reporting.validation_junit(result, strict=strict)
    else:
        text = reporting.validation_text(result, strict=strict, color=reporting.use_color(sys.stdout, args.color))
    reporting.write(text)
    failed = bool(result.errors) or result.state is None or (strict and result.warnings)
    return ExitCode.BAD_INPUT if failed else ExitCode.OK


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(schema.document_schema(args.kind), indent=2))
    return ExitCode.OK
