"""The manifest model: pydantic v2, `extra="forbid"`, one class per object kind.

`documents` holds the envelopes (`apiVersion`/`kind`/`metadata`/`spec`) and the union on `kind`;
`bots`, `fleet` hold the spec bodies. Pure: no file or network access. The JSON Schema in
`schemas/` is generated from these classes (`hermes-fleet schema`).

Start-up cost (every verb imports these): the classes are built with `defer_build` (a class's
validator is made when it first validates, so the kinds a run never meets cost nothing), and
without `from __future__ import annotations` (pydantic would compile and evaluate every
annotation string when it collects the fields).
"""

from controller.manifests.models.bots import (
    Avatar,
    Bot,
    BotDefaults,
    Checkpoints,
    McpServer,
    ModelPin,
    Routine,
    SecretRef,
    Skills,
    Tts,
)
from controller.manifests.models.documents import (
    API_VERSION,
    KINDS,
    AnyDocument,
    BotDocument,
    FleetDocument,
    Metadata,
    PeerDocument,
    PolicyDocument,
    RoomDocument,
    RoutineDocument,
    SectionDocument,
)
from controller.manifests.models.fleet import NOTIFICATION_EVENTS, FleetSpec, Gateway, Peer, PolicySpec, Room, Section, Webhook

__all__ = [
    "API_VERSION",
    "KINDS",
    "NOTIFICATION_EVENTS",
    "AnyDocument",
    "Avatar",
    "Bot",
    "BotDefaults",
    "BotDocument",
    "Checkpoints",
    "FleetDocument",
    "FleetSpec",
    "Gateway",
    "McpServer",
    "Metadata",
    "ModelPin",
    "Peer",
    "PeerDocument",
    "PolicyDocument",
    "PolicySpec",
    "Room",
    "RoomDocument",
    "Routine",
    "RoutineDocument",
    "SecretRef",
    "Section",
    "SectionDocument",
    "Skills",
    "Tts",
    "Webhook",
]
