"""Shared model plumbing: the strict base class and small reusable field types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator


class Strict(BaseModel):
    """Unknown fields are errors (with a "did you mean" from validation); values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Name64 = Annotated[str, StringConstraints(min_length=1, max_length=64)]
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

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.from_env is None) == (self.from_file is None):
            raise ValueError("a secret reference needs exactly one of from_env or from_file")
        return self


EnvValue = SecretRef | str | int | float | bool
