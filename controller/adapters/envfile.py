"""Read and edit a Hermes profile's `.env` without disturbing lines we do not own.

The reconciler reads a profile's secrets with `read_env`, changes keys with `EnvFile.set/remove`
and writes with `write_env`. Values are read by the library Hermes 0.19 loads `.env` with
(python-dotenv, pinned 1.2.2 by hermes-agent 0.19.0, called from `hermes_cli/env_loader.py`), so the
reading is Hermes' own. Lines are written exactly as Hermes' own `save_env_value` writes them (not
with dotenv's `set_key`, which single-quotes every value), so Hermes' startup sanitiser never finds
the file "dirty" and never rewrites it; every other byte of the file is kept.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from controller.adapters import fsio, homebounds
from controller.errors import HermesStateError, RefusedValue
from controller.hermes.env import quote_value, value_problem

_LEADING_WS = re.compile(r"\s*")  # python-dotenv's own: a binding starts past any whitespace, newlines included


@dataclass
class _Chunk:
    """A run of source text: one binding (maybe several lines, for a quoted value) or filler."""

    text: str
    key: str | None = None
    error: bool = False  # a statement python-dotenv could not parse (it sets nothing)


def _blank_prefix(text: str) -> int:
    """The length of the whole blank lines a binding's text starts with."""
    ws_end = _LEADING_WS.match(text).end()  # type: ignore[union-attr]  # matches the empty string at worst
    return max(text.rfind("\n", 0, ws_end), text.rfind("\r", 0, ws_end)) + 1


def _chunks(text: str) -> Iterator[_Chunk]:
    """The file as python-dotenv's parser reads it: each binding with the exact text it came from."""
    for binding in parse_stream(io.StringIO(text)):
        raw = binding.original.string
        blank = _blank_prefix(raw)
        if blank:
            # Blank lines are their own chunk, so replacing a binding keeps them.
            yield _Chunk(raw[:blank])
        if raw[blank:]:
            yield _Chunk(raw[blank:], binding.key, binding.error)


def _values(chunks: Iterable[_Chunk]) -> dict[str, str]:
    """What Hermes' loader puts in the environment: python-dotenv's `dotenv_values` (without `${VAR}`
    expansion, which depends on the environment) over the statements it can parse. A statement it
    cannot parse sets nothing either way; leaving it out keeps dotenv's warning (which names no
    file) off our stderr. `KEY` without `=` sets nothing either."""
    parsable = "".join(chunk.text for chunk in chunks if not chunk.error)
    values = dotenv_values(stream=io.StringIO(parsable), interpolate=False)
    return {key: value for key, value in values.items() if value is not None}


def check_entry(key: str, value: str) -> None:
    """Raise RefusedValue when Hermes could not store `value` under `key` and read it back intact
    (the rules are Hermes facts, in controller.hermes.env; validation runs the same on literals)."""
    problem = value_problem(key, value)
    if problem is not None:
        raise RefusedValue(problem)


def format_line(key: str, value: str) -> str:
    """`KEY=value` (no newline), byte-for-byte what `save_env_value(key, value)` writes."""
    check_entry(key, value)
    return f"{key}={quote_value(value)}"


class EnvFile:
    """A .env file as a list of chunks; rendering an unmodified file gives back the same text."""

    def __init__(self, chunks: list[_Chunk] | None = None) -> None:
        self._chunks = list(chunks or [])
        self._read: dict[str, str] | None = None  # python-dotenv's reading, until the next edit

    @classmethod
    def parse(cls, text: str) -> EnvFile:
        return cls(list(_chunks(text)))

    def _values(self) -> dict[str, str]:
        if self._read is None:
            self._read = _values(self._chunks)
        return self._read

    def get(self, key: str) -> str | None:
        """The value Hermes' loader puts in the environment; the last binding wins, as in dotenv.

        `${VAR}` references are returned unexpanded (their expansion depends on the environment).
        """
        return self._values().get(key)

    def keys(self) -> list[str]:
        return list(self._values())

    def as_dict(self) -> dict[str, str]:
        """Every key with the value Hermes' loader would put in the environment."""
        return dict(self._values())

    def set(self, key: str, value: str) -> bool:
        """Replace the key's line in place (dropping later duplicates), else append. True if changed."""
        line = format_line(key, value) + "\n"
        positions = [i for i, chunk in enumerate(self._chunks) if chunk.key == key]
        if len(positions) == 1 and self._chunks[positions[0]].text == line:
            return False
        self._read = None
        new = _Chunk(line, key)
        if positions:
            self._chunks[positions[0]] = new
            for index in reversed(positions[1:]):
                del self._chunks[index]
            return True
        if self._chunks and not self._chunks[-1].text.endswith(("\n", "\r")):
            self._chunks[-1].text += "\n"
        self._chunks.append(new)
        return True

    def remove(self, key: str) -> bool:
        before = len(self._chunks)
        self._chunks = [chunk for chunk in self._chunks if chunk.key != key]
        self._read = None
        return len(self._chunks) != before

    def render(self) -> str:
        return "".join(chunk.text for chunk in self._chunks)


def read_env(path: Path | str) -> EnvFile:
    """The profile's .env; a missing file is an empty one."""
    path = Path(path)
    data = fsio.read_bounded(path, homebounds.ENV_BYTES)  # a FIFO or a huge file: a clear HermesStateError
    if data is None:
        return EnvFile()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HermesStateError(
            f"{path} is not UTF-8 text",
            path=str(path),
            hint="run any hermes command for this profile (it rewrites a UTF-16 .env as UTF-8), or fix it",
        ) from exc
    return EnvFile.parse(text)


def write_env(path: Path | str, env: EnvFile, *, expect: object = fsio.UNCHECKED) -> None:
    """Atomic write; a new file is created 0600 (it holds secrets), an existing one keeps its mode
    less any access for others (a hand-made 0644 `.env` becomes 0640).

    `expect`: the bytes read before editing (None: there was no file); fsio.ChangedUnderUs if
    another writer changed the file meanwhile (Hermes' `save_env_value` takes no lock).
    """
    fsio.atomic_write_text(Path(path), env.render(), mode=0o600, expect=expect, private=True)
