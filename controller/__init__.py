"""hermes-fleet: declarative, GitOps-style configuration for Hermes Agent bot fleets.

The public surface is the `hermes-fleet` command (controller.cli) and the manifest format
(controller.manifests.models, docs/manifest.md). Everything else may change between releases.
"""

__version__ = "0.1.0"
