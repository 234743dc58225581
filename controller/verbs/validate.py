"""`validate` (offline checks, four output formats) and `schema` (the JSON Schema)."""

from __future__ import annotations

import argparse
import json
import sys

from controller.errors import ExitCode
from controller.manifests import schema
from controller.verbs import common, reporting


def cmd_validate(args: argparse.Namespace) -> int:
    results = common.load_fleets(args)  # several fleets in the paths: each is validated on its own
    strict = args.strict
    if args.output == "json":
        text = reporting.validation_json_fleets(results, strict=strict)
    elif args.output == "github":
        text = reporting.validation_github(reporting.merged_result(results), strict=strict)
    elif args.output == "junit":
        text = reporting.validation_junit(reporting.merged_result(results), strict=strict)
    else:
        text = reporting.validation_text_fleets(results, strict=strict, color=reporting.use_color(sys.stdout, args.color))
    reporting.write(text)
    common.wrote_report(args)
    failed = any(bool(r.errors) or r.state is None or (strict and r.warnings) for r in results)
    return ExitCode.BAD_INPUT if failed else ExitCode.OK


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(schema.document_schema(args.kind), indent=2))
    return ExitCode.OK
