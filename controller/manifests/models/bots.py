"""A Bot (one Hermes profile in Bot Mode) and everything nested in it: model pin, skills, MCP
servers, TTS, avatar, checkpoints and routines. Field names follow Hermes' own config keys."""

from typing import Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from controller.hermes import vocabulary
from controller.manifests.models.base import ConfigMap, EnvValue, Name64, NonEmpty, SecretRef, Strict, Trimmed64, TrimmedName64

__all__ = [
    "BLOB_SILHOUETTES",
    "GEOMETRIC_SHAPES",
    "Avatar",
    "Bot",
    "BotDefaults",
    "BotSpec",
    "Checkpoints",
    "McpServer",
    "ModelPin",
    "Routine",
    "RoutineSpec",
    "SecretRef",
    "Skills",
    "Tts",
]

# docs/hermes/bot-mode.md#avatars: every blob silhouette and classic shape Desktop renders.
BLOB_SILHOUETTES = ("round", "organic", "boxy", "capsule", "nub", "cloud", "droplet", "hexagon", "sun", "triangle")
GEOMETRIC_SHAPES = ("circle", "squircle", "pill", "triangle", "hexagon", "cloud", "drop")
TTS_PROVIDERS = vocabulary.TTS_PROVIDERS  # tools/tts_tool.py BUILTIN_TTS_PROVIDERS (0.19.0)
_CSS_COLOR = r"^(#[0-9a-fA-F]{3,8}|(rgb|rgba|hsl|hsla)\([^()]*\)|[a-zA-Z]{3,30})$"


class ModelPin(Strict):
    """`model.*` in config.yaml: the provider and model this bot always uses."""

    provider: NonEmpty | None = Field(default=None, description="config.yaml model.provider, e.g. openrouter.")
    default: NonEmpty | None = Field(default=None, description="config.yaml model.default, the model id.")
    base_url: NonEmpty | None = Field(default=None, description="config.yaml model.base_url (custom endpoints).")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if self.provider is None and self.default is None and self.base_url is None:
            raise ValueError("a model pin needs at least 'default' (the model id) or 'provider'")
        return self


class Skills(Strict):
    """`skills.*` in config.yaml: which installed skills are switched off."""

    disabled: list[NonEmpty] | None = Field(default=None, description="config.yaml skills.disabled.")
    platform_disabled: dict[str, list[NonEmpty]] | None = Field(
        default=None, description="config.yaml skills.platform_disabled.<platform>."
    )


class McpTools(Strict):
    include: list[NonEmpty] | None = None
    exclude: list[NonEmpty] | None = None
    resources: bool | None = None
    prompts: bool | None = None


class McpServer(Strict):
    """One `mcp_servers.<name>` entry: a stdio server (command) or a remote one (url)."""

    command: NonEmpty | None = None
    args: list[str] | None = None
    env: dict[str, EnvValue] | None = Field(
        default=None, description="Environment of a stdio server; secrets as from_env/from_file references."
    )
    url: Annotated[str, StringConstraints(pattern=r"^https?://")] | None = None
    headers: dict[str, EnvValue] | None = Field(
        default=None, description="HTTP headers of a remote server; secrets as references."
    )
    transport: Literal["http", "sse"] | None = None
    timeout: float | None = Field(default=None, gt=0)
    connect_timeout: float | None = Field(default=None, gt=0)
    enabled: bool | None = Field(default=None, description="Hermes 0.19's switch (enabled: false turns it off).")
    disabled: bool | None = Field(default=None, description="Hermes main's Bot editor switch (disabled: true).")
    tools: McpTools | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of 'command' (stdio) or 'url' (remote)")
        if self.command is not None and (self.headers or self.transport):
            raise ValueError("'headers' and 'transport' apply only to a remote server with 'url'")
        if self.url is not None and (self.args is not None or self.env):
            raise ValueError("'args' and 'env' apply only to a stdio server with 'command'")
        return self


class Tts(Strict):
    """`tts.*` in config.yaml: the provider and one settings block per provider."""

    provider: Literal[TTS_PROVIDERS] | None = None  # type: ignore[valid-type]
    edge: ConfigMap | None = None
    elevenlabs: ConfigMap | None = None
    openai: ConfigMap | None = None
    gemini: ConfigMap | None = None
    xai: ConfigMap | None = None
    mistral: ConfigMap | None = None
    minimax: ConfigMap | None = None
    kittentts: ConfigMap | None = None
    neutts: ConfigMap | None = None
    piper: ConfigMap | None = None
    deepinfra: ConfigMap | None = None


class Checkpoints(Strict):
    """`checkpoints.*` in config.yaml: the filesystem checkpoint policy."""

    enabled: bool | None = None
    max_snapshots: int | None = Field(default=None, ge=1)
    max_total_size_mb: int | None = Field(default=None, ge=1)
    max_file_size_mb: int | None = Field(default=None, ge=1)
    auto_prune: bool | None = None
    retention_days: int | None = Field(default=None, ge=0)
    delete_orphans: bool | None = None
    min_interval_hours: int | None = Field(default=None, ge=0)


class Avatar(Strict):
    """The Bot Mode face: a blob face, a classic geometric shape, or an uploaded image."""

    kind: Literal["blob", "geometric", "image"] | None = Field(
        default=None, description="Inferred when absent: image if 'image' is set, geometric if 'shape' is set, else blob."
    )
    seed: Annotated[str, StringConstraints(pattern=r"^[^:\s]{1,64}$")] | None = Field(
        default=None, description="blob: lock the face to this seed (Desktop's Lock face / Randomize)."
    )
    silhouette: Literal[BLOB_SILHOUETTES] | None = Field(  # type: ignore[valid-type]
        default=None, description="blob: pin one silhouette."
    )
    shape: Literal[GEOMETRIC_SHAPES] | None = Field(default=None, description="geometric: the shape.")  # type: ignore[valid-type]
    color: Annotated[str, StringConstraints(pattern=_CSS_COLOR)] | None = Field(
        default=None, description="geometric: any CSS colour, e.g. '#8b5cf6' or 'hsl(210 68% 58%)'."
    )
    image: NonEmpty | None = Field(
        default=None, description="image: a PNG, JPEG or WebP file (relative to the manifest), at most 2,000,000 bytes."
    )

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> Self:
        kind = self.resolved_kind
        allowed = {"blob": {"seed", "silhouette"}, "geometric": {"shape", "color"}, "image": {"image"}}[kind]
        stray = sorted(
            f for f in ("seed", "silhouette", "shape", "color", "image") if getattr(self, f) is not None and f not in allowed
        )
        if stray:
            raise ValueError(f"a {kind} avatar takes only {sorted(allowed)}, not {stray}")
        if kind == "geometric" and self.shape is None:
            raise ValueError(f"a geometric avatar needs 'shape' (one of {', '.join(GEOMETRIC_SHAPES)})")
        if kind == "image" and self.image is None:
            raise ValueError("an image avatar needs 'image: path/to/file.png'")
        return self

    @property
    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        if self.image is not None:
            return "image"
        return "geometric" if self.shape is not None else "blob"


class RoutineSpec(Strict):
    """A routine's settings (everything but its name)."""

    schedule: NonEmpty = Field(
        description="Hermes grammar: 5-field numeric cron, 'every 30m|2h|1d', ISO time (one-shot), or a duration."
    )
    prompt: NonEmpty | None = Field(default=None, description="The instruction the bot runs.")
    paused: bool = False
    paused_reason: str | None = None
    skills: list[NonEmpty] | None = None
    model: NonEmpty | None = Field(default=None, description="Model override for this job.")
    provider: NonEmpty | None = Field(default=None, description="Provider override for this job.")
    base_url: NonEmpty | None = None
    deliver: NonEmpty | None = Field(
        default=None, description="Where results go: local (default), bot-chat, or a platform target."
    )
    toolsets: list[NonEmpty] | None = Field(default=None, description="The job's enabled_toolsets.")
    workdir: NonEmpty | None = None
    repeat: int | None = Field(default=None, ge=1, description="Stop after this many runs.")
    context_from: list[NonEmpty] | None = Field(
        default=None, description="Continuity: ['self'] feeds the previous run's output in."
    )
    script: NonEmpty | None = Field(default=None, description="A script the job runs (with no_agent: no model call).")
    no_agent: bool | None = None
    renamed_from: NonEmpty | None = Field(
        default=None, description="The routine's previous name: a rename updates the job instead of recreating it."
    )

    @model_validator(mode="after")
    def _has_work(self) -> Self:
        if self.prompt is None and self.script is None and not self.skills:
            raise ValueError("a routine needs a 'prompt' (or a 'script' or 'skills')")
        return self


class Routine(RoutineSpec):
    """A Bot routine: a Hermes cron job named `[bot:<bot>] <name>` in the bot's own cron store."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00\n\r]*\S[^\x00\n\r]*$")] = Field(
        description="The routine's title; the job is named '[bot:<bot>] <name>'."
    )


# A label's key and value: what `-l key=value` on the command line can name (no '=' or ',').
LabelKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")]
LabelValue = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._/-]{0,63}$")]


class _BotSettings(Strict):
    """Fields a fleet's `defaults` may set for every bot."""

    model: ModelPin | None = Field(default=None, description="config.yaml model.provider / model.default / model.base_url.")
    toolsets: list[NonEmpty] | None = Field(default=None, description="config.yaml toolsets.")
    skills: Skills | None = None
    mcp_servers: dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")], McpServer] | None = Field(
        default=None, description="config.yaml mcp_servers.<name>."
    )
    tts: Tts | None = None
    checkpoints: Checkpoints | None = None
    env: dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], EnvValue] | None = Field(
        default=None, description="Keys written to the bot's .env; secrets only as from_env / from_file references."
    )
    config: ConfigMap | None = Field(
        default=None, description="Any other config.yaml key (dotted or nested), deep-merged and owned like typed fields."
    )


class BotDefaults(_BotSettings):
    """Settings applied to every bot that does not set them itself (`env` and `config` merge per key)."""


class BotSpec(_BotSettings):
    """A bot's settings (everything but its name)."""

    title: Trimmed64 | None = Field(
        default=None, description="Bot Mode title (ui_meta hermes-bots.title), surrounding spaces stripped; gives the @-tags."
    )
    description: Annotated[str, StringConstraints(max_length=2000)] | None = Field(
        default=None, description="profile.yaml description (and ui_meta hermes-bots.description)."
    )
    display_name: Name64 | None = Field(default=None, description="profile.yaml display_name.")
    soul: str | None = Field(default=None, description="SOUL.md content (the persona).")
    soul_file: NonEmpty | None = Field(default=None, description="SOUL.md from a file, relative to the manifest.")
    avatar: Avatar | None = None
    hidden: bool | None = Field(default=None, description="ui_meta hermes-bots.hidden: hide from the roster.")
    pinned: bool | None = Field(default=None, description="ui_meta hermes-bots.pinned: pin to the top.")
    section: TrimmedName64 | None = Field(default=None, description="The section (by name) this bot is filed under.")
    routines: list[Routine] | None = None
    clone_from: NonEmpty | None = Field(
        default=None, description="At creation only: copy config, .env, SOUL, skills and memories from this profile."
    )
    create_empty: bool | None = Field(default=None, description="At creation only: no bundled skills (.no-bundled-skills).")
    host: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,253}$")] | None = Field(
        default=None,
        description="The machine this bot lives on (a reconciler applies only its --host's slice); "
        "default: every machine that applies the fleet.",
    )
    renamed_from: NonEmpty | None = Field(
        default=None,
        description="The bot's previous name: apply renames that profile (memories, sessions, skills, "
        "Bot Chat, .env, routines, rooms) instead of making a new, empty one.",
    )
    labels: dict[LabelKey, LabelValue] | None = Field(
        default=None,
        description="Labels for selecting bots (plan/apply -l key=value); never written to the home.",
    )

    @model_validator(mode="after")
    def _exclusive(self) -> Self:
        if self.soul is not None and self.soul_file is not None:
            raise ValueError("set either 'soul' or 'soul_file', not both")
        if self.clone_from is not None and self.create_empty:
            raise ValueError("set either 'clone_from' or 'create_empty', not both")
        return self


class Bot(BotSpec):
    """One Bot: a Hermes profile, its Bot Mode look, and its routines."""

    name: NonEmpty = Field(description="The profile name (Hermes: ^[a-z0-9][a-z0-9_-]{0,63}$); 'default' is the root.")
