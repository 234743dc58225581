"""Shared model plumbing: the strict base class and small reusable field types."""

from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """Unknown fields are errors (with a "did you mean" from validation); values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


def assemble(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of `cls` from `values` that are valid for it already, holding every field in
    field order: what `cls.model_validate` makes of them, without validating them once more (and
    what `model_construct` makes, without its per-field default lookups). `fields_set` is the
    fields given explicitly (model_fields_set). For the hot paths of validation only; the models
    are frozen, so this is the one place they are put together by hand."""
    obj = cls.__new__(cls)
    put = object.__setattr__
    put(obj, "__dict__", values)
    put(obj, "__pydantic_fields_set__", fields_set)
    put(obj, "__pydantic_extra__", None)
    put(obj, "__pydantic_private__", None)
    return obj


NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Name64 = Annotated[str, StringConstraints(min_length=1, max_length=64)]
# A display text the Desktop trims wherever it reads or writes it (a title, a section name:
# docs/hermes/bot-mode.md#titles): stripped here, so it is written and compared trimmed.
Trimmed64 = Annotated[str, StringConstraints(strip_whitespace=True, max_length=64)]
TrimmedName64 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
# Plain config values a passthrough may carry (anything YAML can say).
ConfigMap = dict[str, Any]


class SecretRef(Strict):
    """A secret by reference: read from the applying machine's environment or from a file."""

    from_env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None, description="Name of an environment variable on the machine that runs apply."
    )
    from_file: NonEmpty | None = Field(
        default=None,
        description="Path of a file holding the value (relative paths: to the manifest's folder). "
        "Trailing newlines are stripped.",
    )
    from_command: Annotated[list[NonEmpty], Field(min_length=1, max_length=64)] | None = Field(
        default=None,
        description="A command (argv list, no shell) whose standard output is the value, e.g. "
        "['pass', 'show', 'acme/openrouter'] or ['sops', '-d', '--extract', '[\"key\"]', 'secrets.enc.yaml']. "
        "Runs in the manifest's folder; must exit 0 within 'timeout' and print at most 64 KiB; "
        "trailing newlines are stripped. Its output is never shown or logged.",
    )
    timeout: float | None = Field(
        default=None, gt=0, le=300, description="from_command only: seconds before the command is killed (default 10)."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [f for f in ("from_env", "from_file", "from_command") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError("a secret reference needs exactly one of from_env, from_file or from_command")
        if self.timeout is not None and self.from_command is None:
            raise ValueError("'timeout' applies only to from_command")
        return self


EnvValue = SecretRef | str | int | float | bool
