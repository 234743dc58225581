"""Read and edit a Hermes profile's `.env` without disturbing lines we do not own.

The reconciler reads a profile's secrets with `read_env`, changes keys with `EnvFile.set/remove`
and writes with `write_env`. Values are read the way Hermes 0.19 loads them (python-dotenv 1.2,
via `hermes_cli/env_loader.py`); lines are written exactly as Hermes' own `save_env_value` writes
them, so Hermes' startup sanitiser never finds the file "dirty" and never rewrites it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from controller.adapters import fsio, homebounds
from controller.errors import HermesStateError, RefusedValue
from controller.hermes.env import quote_value, value_problem

# --- python-dotenv 1.2 grammar (dotenv/parser.py), re-stated as patterns ---------------------
_LEADING_WS = re.compile(r"\s*")
_EXPORT = re.compile(r"(?:export[^\S\r\n]+)?")
_KEY_QUOTED = re.compile(r"'([^']+)'")
_KEY_BARE = re.compile(r"([^=\#\s]+)")
_INLINE_WS = re.compile(r"[^\S\r\n]*")
_EQUALS = re.compile(r"=[^\S\r\n]*")
_VALUE_SINGLE = re.compile(r"'((?:\\'|[^'])*)'")
_VALUE_DOUBLE = re.compile(r'"((?:\\"|[^"])*)"')
_VALUE_BARE = re.compile(r"[^\r\n]*")
_COMMENT = re.compile(r"(?:[^\S\r\n]*#[^\r\n]*)?")
_END_OF_LINE = re.compile(r"[^\S\r\n]*(?:\r\n|\n|\r|$)")
_REST_OF_LINE = re.compile(r"[^\r\n]*(?:\r|\n|\r\n)?")
_DOUBLE_ESCAPES = re.compile(r"\\[\\'\"abfnrtv]")
_SINGLE_ESCAPES = re.compile(r"\\[\\']")
_BARE_COMMENT = re.compile(r"\s+#.*")


class _Unparsable(Exception):
    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


@dataclass
class _Chunk:
    """A run of source text: one binding (maybe several lines, for a quoted value) or filler."""

    text: str
    key: str | None = None
    value: str | None = None  # None: no binding, or `KEY` without `=` (dotenv sets nothing)


def _need(pattern: re.Pattern[str], text: str, pos: int) -> re.Match[str]:
    match = pattern.match(text, pos)
    if match is None:
        raise _Unparsable(pos)
    return match


def _unescape(match: re.Match[str]) -> str:
    return codecs.decode(match.group(0), "unicode-escape")


def _parse_value(text: str, pos: int) -> tuple[str, int]:
    char = text[pos : pos + 1]
    if char == "'":
        match = _need(_VALUE_SINGLE, text, pos)
        return _SINGLE_ESCAPES.sub(_unescape, match.group(1)), match.end()
    if char == '"':
        double = _need(_VALUE_DOUBLE, text, pos)
        return _DOUBLE_ESCAPES.sub(_unescape, double.group(1)), double.end()
    if char in ("", "\n", "\r"):
        return "", pos
    bare = _VALUE_BARE.match(text, pos)
    assert bare is not None  # matches the empty string at worst
    return _BARE_COMMENT.sub("", bare.group(0)).rstrip(), bare.end()


def _parse_binding(text: str, pos: int) -> tuple[int, str | None, str | None]:
    """One dotenv binding starting at `pos` (past leading whitespace): (end, key, value)."""
    try:
        pos = _need(_EXPORT, text, pos).end()
        key: str | None = None
        if not text.startswith("#", pos):
            match = _need(_KEY_QUOTED if text.startswith("'", pos) else _KEY_BARE, text, pos)
            key, pos = match.group(1), match.end()
        pos = _need(_INLINE_WS, text, pos).end()
        value: str | None = None
        if text.startswith("=", pos):
            pos = _need(_EQUALS, text, pos).end()
            value, pos = _parse_value(text, pos)
        pos = _need(_COMMENT, text, pos).end()
        pos = _need(_END_OF_LINE, text, pos).end()
        return pos, key, value
    except _Unparsable as failure:
        # dotenv skips the rest of the line from where it failed and sets nothing.
        end = _REST_OF_LINE.match(text, failure.pos)
        return (end.end() if end else len(text)), None, None


def _chunks(text: str) -> Iterator[_Chunk]:
    pos = 0
    while pos < len(text):
        ws_end = _LEADING_WS.match(text, pos).end()  # type: ignore[union-attr]
        last_break = max(text.rfind("\n", pos, ws_end), text.rfind("\r", pos, ws_end))
        if last_break >= 0:
            # Blank lines are their own chunk, so replacing a binding keeps them.
            yield _Chunk(text[pos : last_break + 1])
            pos = last_break + 1
        if ws_end >= len(text):
            if pos < len(text):
                yield _Chunk(text[pos:])
            return
        end, key, value = _parse_binding(text, ws_end)
        yield _Chunk(text[pos:end], key, value)
        pos = end


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

    @classmethod
    def parse(cls, text: str) -> EnvFile:
        return cls(list(_chunks(text)))

    def get(self, key: str) -> str | None:
        """The value Hermes' loader puts in the environment; the last binding wins, as in dotenv.

        `${VAR}` references are returned unexpanded (their expansion depends on the environment).
        """
        value: str | None = None
        for chunk in self._chunks:
            if chunk.key == key:
                value = chunk.value
        return value

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for chunk in self._chunks:
            if chunk.key is not None:
                seen[chunk.key] = None
        return [key for key in seen if self.get(key) is not None]

    def as_dict(self) -> dict[str, str]:
        """Every key with the value Hermes' loader would put in the environment."""
        return {key: value for key in self.keys() if (value := self.get(key)) is not None}

    def set(self, key: str, value: str) -> bool:
        """Replace the key's line in place (dropping later duplicates), else append. True if changed."""
        line = format_line(key, value) + "\n"
        positions = [i for i, chunk in enumerate(self._chunks) if chunk.key == key]
        if len(positions) == 1 and self._chunks[positions[0]].text == line:
            return False
        new = _Chunk(line, key, value)
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
