"""Fleet-level objects: sections, rooms, peers, the gateway policy and install-wide settings."""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from controller import codes
from controller.manifests.models.base import ConfigMap, Name64, NonEmpty, SecretRef, Strict, TrimmedName64
from controller.manifests.models.bots import Bot, BotDefaults, Checkpoints


class SectionSpec(Strict):
    """A section's settings (everything but its name)."""

    id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")] | None = Field(
        default=None,
        description="Pin the sectionId (e.g. one a Desktop minted, as 'sec-mig3k2p1-4f9xq'); "
        "default: a stable id derived from the fleet and section name.",
    )


HostName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,253}$")]
WhoAnswers = Annotated[
    str, StringConstraints(pattern=r"^(everyone|auto|lead:([a-z0-9][a-z0-9_-]{0,63}/)?[a-z0-9][a-z0-9_-]{0,63})$")
]


class RoomSpec(Strict):
    """A room's settings (everything but its name)."""

    members: list[NonEmpty] = Field(
        description="2-6 members: bot names of this fleet, or 'peer/profile' for a bot on another machine."
    )
    who_answers: WhoAnswers = Field(
        default="everyone", description="Who answers a message that names nobody: everyone | auto | lead:<bot>."
    )
    detect_stop_directives: bool = Field(default=True, description="Stop the room when a member says to stop.")
    picture: NonEmpty | None = Field(default=None, description="The room picture: an image file relative to the manifest.")
    host: HostName | None = Field(default=None, description="The machine whose gateway owns this room (see Bot.host).")
    renamed_from: Name64 | None = Field(
        default=None, description="The room's previous name: a rename renames the live room instead of creating one."
    )


class PeerAccept(Strict):
    """The machine of this fleet whose gateway the peer URL reaches: it gets the API server and key."""

    host: HostName = Field(description="The fleet machine (as in Bot.host) that accepts this peer's messages.")
    bind: NonEmpty = Field(
        default="0.0.0.0",
        description="API_SERVER_HOST: the address its API server listens on (default 0.0.0.0, every interface).",
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="API_SERVER_PORT; default: the port of the peer's url.")
    profiles: bool = Field(
        default=True,
        description="gateway.multiplex_profiles: one gateway serves every bot, so 'peer/<bot>' reaches that bot.",
    )


class PeerSpec(Strict):
    """A peer's settings (everything but its name)."""

    url: NonEmpty = Field(description="The peer gateway's base URL, http:// or https://.")
    host: HostName | None = Field(
        default=None,
        description="Only this machine registers the peer (see Bot.host); default: every machine (but the accepting one).",
    )
    key: SecretRef | None = Field(default=None, description="The peer's key, by reference only.")
    note: str | None = None
    accept: PeerAccept | None = Field(
        default=None,
        description="When the peer is a machine of this fleet: configure its accepting side too "
        "(API server and the same key), from this one declaration.",
    )


class Section(SectionSpec):
    """A roster heading; members carry ui_meta hermes-bots.sectionId / sectionName."""

    name: TrimmedName64 = Field(description="The section's name, surrounding spaces stripped (as the Desktop does).")


class Room(RoomSpec):
    """A gateway-owned group chat of 2-6 Bots."""

    name: Name64 = Field(description="The room's display name (also each member's ui_meta groups entry).")


class Peer(PeerSpec):
    """Another machine's gateway that bots may message: bot_peers.<name> + HERMES_PEER_<NAME>_KEY."""

    name: NonEmpty = Field(description="Peer name (^[a-z0-9][a-z0-9_-]{0,63}$).")


class BotLoopGuard(Strict):
    """gateway.bot_loop_guard.*: how far bot-to-bot exchanges may go (the keys Hermes main's
    gateway/bot_loop_guard.py reads; docs/hermes/no-effect.md#loop-guard-keys)."""

    enabled: bool | None = None
    max_events: int | None = Field(default=None, ge=1, description="Admitted bot messages per conversation and window.")
    window_seconds: int | None = Field(default=None, ge=1)
    cooldown_seconds: int | None = Field(default=None, ge=0)


class GroupRouter(Strict):
    """auxiliary.group_router: the cheap model that picks who answers in 'auto' rooms."""

    provider: NonEmpty | None = None
    model: NonEmpty | None = None
    base_url: NonEmpty | None = None


class Gateway(Strict):
    """Install-wide gateway and Bot Mode policy (the root profile's config.yaml)."""

    bot_loop_guard: BotLoopGuard | None = None
    bot_mode_protocol: bool | None = Field(default=None, description="agent.bot_mode_protocol.")
    group_router: GroupRouter | None = Field(default=None, description="auxiliary.group_router.")


NOTIFICATION_EVENTS = tuple(event.value for event in codes.NOTIFICATION_EVENTS)  # plain words for the schema


class Webhook(Strict):
    """A webhook `watch` (and `apply --notify`) posts events to; its URL is a secret reference."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")] = Field(
        description="Names the webhook in logs (its URL never appears)."
    )
    url: SecretRef = Field(description="The webhook URL (http:// or https://), by reference: it usually embeds a token.")
    format: Literal["json", "slack"] = Field(
        default="json", description="json: hermes-fleet's event object; slack: {'text': ...} for Slack-compatible hooks."
    )
    events: list[Literal[NOTIFICATION_EVENTS]] | None = Field(  # type: ignore[valid-type]
        default=None, description="Only these events (default: every event)."
    )
    timeout: float = Field(default=5.0, gt=0, le=60, description="Seconds per attempt (connect, send, wait for the answer).")


class PolicySpec(Strict):
    """Install-wide settings: bot defaults, gateway policy, checkpoint policy, config passthrough."""

    defaults: BotDefaults | None = None
    gateway: Gateway | None = None
    checkpoints: Checkpoints | None = Field(default=None, description="Install-wide checkpoints.* (root config.yaml).")
    config: ConfigMap | None = Field(default=None, description="Install-wide config.yaml keys (root profile).")
    notifications: list[Webhook] | None = Field(
        default=None, description="Webhooks for the reconciler's events (docs/manifest.md, Notifications)."
    )


class FleetSpec(PolicySpec):
    """The whole fleet in one document."""

    sections: list[Section] | None = None
    bots: list[Bot] | None = None
    rooms: list[Room] | None = None
    peers: list[Peer] | None = None
