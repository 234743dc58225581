"""The pure core: domain types, the planner, drift, and Hermes' job and room forms.

Nothing in this package does I/O or reads the clock; the import contract in pyproject.toml
keeps it independent of `controller.adapters`.
"""
