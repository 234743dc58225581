"""Manifest documents: the kubectl-style envelope around each kind, and the union on `kind`.

One `Fleet` document can hold everything; or each object is its own document (`Bot`, `Section`,
`Room`, `Routine`, `Peer`, `Policy`). Both forms normalise to the same desired state (desired.py).
"""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from controller.manifests.models.base import NonEmpty, Strict
from controller.manifests.models.bots import BotSpec, RoutineSpec
from controller.manifests.models.fleet import FleetSpec, PeerSpec, PolicySpec, RoomSpec, SectionSpec

API_VERSION = "hermes-fleet/v1"
KINDS = ("Fleet", "Bot", "Section", "Room", "Routine", "Peer", "Policy")
FleetName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]


class Metadata(Strict):
    name: NonEmpty = Field(description="The object's name (for a Fleet: the fleet name, its ownership scope).")
    fleet: FleetName | None = Field(
        default=None,
        description="The fleet this object belongs to; default: the Fleet document of the same run, or --fleet.",
    )
    labels: dict[str, str] | None = Field(default=None, description="Free-form labels (not used by Hermes).")
    annotations: dict[str, str] | None = Field(default=None, description="Free-form notes (not used by Hermes).")


class _Document(Strict):
    apiVersion: Literal["hermes-fleet/v1"] = Field(description="Always hermes-fleet/v1.")
    metadata: Metadata


class FleetMetadata(Metadata):
    name: FleetName = Field(description="The fleet name: the ownership scope (two fleets never touch each other's objects).")


class FleetDocument(_Document):
    kind: Literal["Fleet"]
    metadata: FleetMetadata
    spec: FleetSpec = Field(default_factory=FleetSpec)


class BotDocument(_Document):
    kind: Literal["Bot"]
    spec: BotSpec = Field(default_factory=BotSpec)


class SectionDocument(_Document):
    kind: Literal["Section"]
    spec: SectionSpec = Field(default_factory=SectionSpec)


class RoomDocument(_Document):
    kind: Literal["Room"]
    spec: RoomSpec


class RoutineDocSpec(RoutineSpec):
    bot: NonEmpty = Field(description="The bot this routine belongs to.")


class RoutineDocument(_Document):
    kind: Literal["Routine"]
    spec: RoutineDocSpec


class PeerDocument(_Document):
    kind: Literal["Peer"]
    spec: PeerSpec


class PolicyDocument(_Document):
    kind: Literal["Policy"]
    spec: PolicySpec = Field(default_factory=PolicySpec)


AnyDocument = Annotated[
    FleetDocument | BotDocument | SectionDocument | RoomDocument | RoutineDocument | PeerDocument | PolicyDocument,
    Field(discriminator="kind"),
]
