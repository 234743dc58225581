"""A profile's `profile.yaml`: description, display name and the Bot Mode `ui_meta` record.

The reconciler loads it with `ProfileMeta.load`, sets the fields a fleet owns and saves. The
Desktop/gateway writes the same file (docs/hermes/bot-mode.md#clears, #revisions), so the `hermes-bots`
namespace is replaced whole with a revision bump, everything else is kept, and a write that
races another writer raises a retryable `ConflictError` instead of losing their change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.adapters import fsio, homebounds
from controller.adapters.configfile import ConfigDoc, unparseable_hint
from controller.errors import HermesStateError, RefusedValue

BOTS_NAMESPACE = "hermes-bots"
UI_META = "ui_meta"
REVISIONS = "_ui_meta_revisions"  # on disk with the underscore; `profiles.list` rows drop it
DISPLAY_NAME_MAX = 64  # main's write_profile_meta limit


class ProfileMeta:
    def __init__(self, doc: ConfigDoc, *, path: Path, text: str | None) -> None:
        self._doc = doc
        self.path = path
        self._loaded_text = text  # None: the file did not exist at load

    @classmethod
    def load(cls, path: Path | str) -> ProfileMeta:
        path = Path(path)
        text = _read_text(path)
        doc = ConfigDoc.parse(text or "", source=str(path), exists=text is not None)
        return cls(doc, path=path, text=text)

    @property
    def exists(self) -> bool:
        return self._loaded_text is not None

    @property
    def changed(self) -> bool:
        return self._doc.changed

    def render(self) -> str:
        return self._doc.render()

    def as_dict(self) -> dict[str, Any]:
        """The whole file as plain data ({} when absent): for the hand-edit baseline."""
        return self._doc.as_dict()

    # --- top-level fields ---------------------------------------------------------------------

    @property
    def description(self) -> str | None:
        """As Hermes reads it (`read_profile_meta` strips it); None when the key is absent."""
        present, value = self._doc.get_in(["description"])
        return str(value or "").strip() if present else None

    @description.setter
    def description(self, value: str | None) -> None:
        if value is None:
            self._doc.delete_in(["description"])
            return
        if self.description == value.strip():
            return
        # Same as `hermes profile describe --text`: a hand-set description is not "auto".
        self._doc.set_in(["description"], value.strip())
        self._doc.set_in(["description_auto"], False)

    @property
    def display_name(self) -> str | None:
        present, value = self._doc.get_in(["display_name"])
        return str(value) if present and value not in (None, "") else None

    @display_name.setter
    def display_name(self, value: str | None) -> None:
        if value is None or value.strip() == "":
            self._doc.delete_in(["display_name"])  # main's writer: an empty value removes it
            return
        value = value.strip()
        if len(value) > DISPLAY_NAME_MAX:
            raise RefusedValue(f"display_name is longer than {DISPLAY_NAME_MAX} characters")
        self._doc.set_in(["display_name"], value)

    # --- Bot Mode record ----------------------------------------------------------------------

    def bot_record(self) -> dict[str, Any] | None:
        present, value = self._doc.get_in([UI_META, BOTS_NAMESPACE])
        return value if present and isinstance(value, dict) else None

    def revision(self, ns: str = BOTS_NAMESPACE) -> int:
        present, revisions = self._doc.get_in([REVISIONS])
        if not present or not isinstance(revisions, dict):
            return 0
        value = revisions.get(ns)
        # Like the gateway's reader: bools and non-ints count as "no revision".
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def set_bot_record(self, record: dict[str, Any]) -> bool:
        """Replace `ui_meta['hermes-bots']` whole (pass the merged full record); bump its revision.

        Nothing changes, and the revision stays, when the record is already equal.
        """
        _, ui_meta = self._doc.get_in([UI_META])
        if ui_meta is not None and not isinstance(ui_meta, dict):
            raise HermesStateError(
                f"{self.path}: ui_meta is a {type(ui_meta).__name__}, not a mapping",
                path=str(self.path),
                hint="fix or remove the ui_meta key",
            )
        next_revision = self.revision() + 1
        if not self._doc.set_in([UI_META, BOTS_NAMESPACE], dict(record)):
            return False
        _, revisions = self._doc.get_in([REVISIONS])
        if revisions is not None and not isinstance(revisions, dict):
            self._doc.delete_in([REVISIONS])  # garbage where a map belongs; the gateway ignores it too
        self._doc.set_in([REVISIONS, BOTS_NAMESPACE], next_revision)
        return True

    # --- writing ------------------------------------------------------------------------------

    def save(self, path: Path | str | None = None) -> None:
        """Atomic write; raises a retryable ConflictError if the file changed since `load`.

        fsio compares the file with what was loaded after the new file is fully written and
        synced, just before it replaces the old one (docs/hermes/bot-mode.md#revisions). Stricter than
        comparing the revision alone: Hermes' own `write_profile_meta` (description,
        display_name) changes the file without bumping any revision.
        """
        target = Path(path) if path is not None else self.path
        text = self.render()
        # Only a file we loaded has a "since load" to compare.
        expect: object = (
            (None if self._loaded_text is None else self._loaded_text.encode("utf-8")) if target == self.path else fsio.UNCHECKED
        )
        # ChangedUnderUs: a ConflictError. Through a temp file even in a staging folder: a new
        # record's `created` stamp makes the bytes run-specific (fsio.atomic_write_bytes).
        fsio.atomic_write_text(target, text, mode=0o644, expect=expect, via_temp=True)
        self._loaded_text = text
        self._doc = ConfigDoc.parse(text, source=str(target))
        self.path = target


def _read_text(path: Path) -> str | None:
    data = fsio.read_bounded(path, homebounds.PROFILE_META_BYTES)  # a FIFO or a huge file: a clear HermesStateError
    if data is None:
        return None
    try:
        return data.decode("utf-8")  # no newline translation: save() compares bytes
    except UnicodeDecodeError as exc:
        raise HermesStateError(f"cannot read {path}: {exc}", path=str(path), hint=unparseable_hint(str(path))) from exc
