"""The verbs: arguments in, one engine call, rendered output and an exit code out.

Each module is one verb (validate/schema, plan/apply, status, restore, export, demo, watch);
`common` turns arguments into manifests and options, `reporting` renders every output format.
Imported lazily by `controller.cli`, so `--help` starts without pydantic or ruamel.
"""
