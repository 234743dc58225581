r"""Redaction: the one rule for what hermes-fleet never shows, wherever the value comes from.

Manifests cannot carry a credential as a literal (validation refuses them), but the home can: a
user or a bot may write a token by hand into a managed `config.yaml`, a URL, a title or a routine.
Everything hermes-fleet prints, logs or keeps goes through this module, which masks:

* the value under a key that looks like a credential (`api_key`, `GITHUB_TOKEN`, `password`,
  `Authorization`, `bearer`, `apiKey`, ...; any case, any depth): `is_credential_key`;
* every value in an MCP server's `env` or `headers` (`mcp_servers.<name>.env.*`), and the
  credential-looking items of its `args` (`--api-key=VALUE`, the item after `--token`);
* a URL's user-info and every query value (`https://***@host/?q=***`): `redact_url`;
* any text shaped like a common token (`sk-...`, `ghp_...`, `xoxb-...`, `AKIA...`, `Bearer ...`,
  a JWT `eyJ...`, a Telegram or Discord bot token): `mask_text`.

A whole value withheld is the `SECRET` marker, shown as `(secret)`; a part of a text withheld is
`***`. The marker is a `Withheld`, a distinct type: outputs tell it from a value by its type, never
by its text. Where only text remains (JSON, a value inside a mapping), `unforgeable` escapes a real
string that reads like a marker (`(secret)` becomes `\(secret)`), so a bare marker in any output
is always one hermes-fleet withheld; a live value that reads "(secret)" is shown as the value it is.
A `${NAME}` reference is the manifest's own form of a secret (a name, not a value): kept.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>`]+")  # a bounded scheme: linear on a long line
_SSH_SCHEMES = ("ssh", "git+ssh", "ssh+git")  # ssh://git@host/...: a user name, not a credential


# Every text a Withheld may carry: `(secret)`, and a long text's summary `(12 lines, sha256:...)`.
_MARKER = re.compile(r"\((?:secret|[0-9]+ lines, sha256:[0-9a-f]{12})\)")
_MARKER_LIKE = re.compile(r"\\*" + _MARKER.pattern)  # a marker after any number of backslashes


class Withheld(str):
    """Text shown in place of a value (a masked secret, a summary of a SOUL). Its type marks it."""

    __slots__ = ()

    def __new__(cls, text: str) -> Withheld:
        if not _MARKER.fullmatch(text):  # a new kind of marker is added to _MARKER, so outputs escape its imitations
            raise ValueError(f"not a marker: {text!r}")
        return super().__new__(cls, text)


SECRET = Withheld("(secret)")


def unforgeable(value: Any) -> Any:
    """`value` (already `masked`) for an output that keeps only text: a Withheld as its marker, and a
    real string that reads like one (or like an escaped one) with one more leading backslash, so
    `(secret)` in an output is always withheld and `\\(secret)` is the value "(secret)"."""
    if isinstance(value, Withheld):
        return str(value)
    if isinstance(value, str):
        return "\\" + value if _MARKER_LIKE.fullmatch(value) else value
    if isinstance(value, Mapping):
        return {k: unforgeable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unforgeable(v) for v in value]
    return value


# --- keys ------------------------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")  # api_key, apiKey, API-KEY, X-Api-Key
# The last word decides (`GITHUB_TOKEN` yes, `max_tokens` no); a few words mark any key.
_SECRET_LAST = frozenset(
    {"KEY", "KEYS", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "PAT", "CREDENTIAL", "CREDENTIALS", "AUTH"}
    | {"AUTHORIZATION", "APIKEY", "BEARER", "COOKIE", "SIGNATURE", "PASSPHRASE", "DSN"}
)
_SECRET_ANY = frozenset({"SECRET", "SECRETS", "PASSWORD", "PASSWD", "BEARER", "APIKEY", "AUTHORIZATION", "CREDENTIALS"})
_MCP_MASKED_BLOCKS = ("env", "headers")


def is_credential_key(key: str) -> bool:
    """True for a key whose value is a credential: `api_key`, `GITHUB_TOKEN`, `X-Api-Key`, `password`."""
    words = [w.upper() for w in _WORDS.findall(str(key))]
    if not words:
        return False
    return words[-1] in _SECRET_LAST or any(w in _SECRET_ANY for w in words)


def _path_of(where: str) -> tuple[str, ...]:
    """`config:mcp_servers.crm` -> ('mcp_servers', 'crm'); `env:GITHUB_TOKEN` -> ('GITHUB_TOKEN',)."""
    return tuple(s for s in where.rpartition(":")[2].split(".") if s)


def _secret_position(path: tuple[str, ...]) -> bool:
    if path and is_credential_key(path[-1]):
        return True
    return len(path) >= 4 and path[-4] == "mcp_servers" and path[-2] in _MCP_MASKED_BLOCKS


def _mcp_args(path: tuple[str, ...]) -> bool:
    return len(path) >= 3 and path[-3] == "mcp_servers" and path[-1] == "args"


# --- values ----------------------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def masked(value: Any, where: str = "") -> Any:
    """`value` as outputs may show it. `where` is its place: a plan field (`config:tts`,
    `env:GITHUB_TOKEN`) or a dotted config path, so a value under a credential key is withheld."""
    return _mask(value, _path_of(where))


def _mask(value: Any, path: tuple[str, ...]) -> Any:
    if _secret_position(path):
        return withhold(value)
    if isinstance(value, Withheld):
        return value
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, Mapping):
        return {k: _mask(v, (*path, str(k))) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return mask_args(value) if _mcp_args(path) else [_mask(v, path) for v in value]
    return value


def withhold(value: Any) -> Any:
    """A credential's value: SECRET in place of each leaf that holds something (a `${NAME}`
    reference, an empty value and a boolean hold nothing secret and stay)."""
    if value is None or isinstance(value, bool | Withheld) or value == "":
        return value
    if isinstance(value, str) and _REFERENCE.fullmatch(value):
        return value
    if isinstance(value, Mapping):
        return {k: withhold(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [withhold(v) for v in value]
    return SECRET


def mask_args(args: Iterable[Any]) -> list[Any]:
    """A command line with its credentials masked: `--api-key=***`, `TOKEN=***`, and the item after
    a credential flag (`--token`, `-p`... only when the flag's name looks like a credential)."""
    out: list[Any] = []
    hide_next = False
    for item in args:
        if not isinstance(item, str):
            out.append(withhold(item) if hide_next else item)
            hide_next = False
            continue
        name, eq, _ = item.partition("=")
        flag = name.lstrip("-")
        if hide_next and not item.startswith("-"):
            out.append(SECRET)
        elif eq and is_credential_key(flag) and "://" not in name:
            out.append(f"{name}={MASK}")
        else:
            out.append(mask_text(item))
        hide_next = not eq and item.startswith("-") and is_credential_key(flag)
    return out


# --- text ------------------------------------------------------------------------------------------

# Common token shapes, each found by its own pattern that starts with a literal, and tried only on a
# text that holds that literal and is long enough (cheap `in` tests: every value of a plan passes
# here, and outputs of a large fleet run to tens of megabytes). Each needs enough random-looking
# characters that a name does not match; `sk-` ones also need a digit (`sk-learn-tutorial` is a
# name). The group `keep` stays visible: a known prefix, or the separator after a token's public id.
_SHAPES = (
    ("sk-", r"(?P<keep>sk-)(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic, OpenRouter
    ("sk_", r"(?P<keep>sk_(?:live|test)_)[A-Za-z0-9]{16,}"),  # Stripe secret keys
    ("rk_", r"(?P<keep>rk_(?:live|test)_)[A-Za-z0-9]{16,}"),  # and restricted ones
    ("gh", r"(?P<keep>gh[pousr]_)[A-Za-z0-9]{20,}"),  # GitHub
    ("github_pat_", r"(?P<keep>github_pat_)[A-Za-z0-9_]{20,}"),
    ("xox", r"(?P<keep>xox[abposr]-)[A-Za-z0-9-]{10,}"),  # Slack
    ("xapp-", r"(?P<keep>xapp-)[A-Za-z0-9-]{10,}"),
    ("AKIA", r"AKIA[0-9A-Z]{16}"),  # AWS access key id (long-term)
    ("ASIA", r"ASIA[0-9A-Z]{16}"),  # and temporary
    ("AIza", r"AIza[0-9A-Za-z_-]{35}"),  # Google API key
    ("glpat-", r"(?P<keep>glpat-)[A-Za-z0-9_-]{20,}"),  # GitLab
    ("hf_", r"(?P<keep>hf_)[A-Za-z0-9]{30,}"),  # Hugging Face
    ("eyJ", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # JWT
    ("Bearer", r"(?P<keep>Bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),  # an Authorization header's value
    ("Basic", r"(?P<keep>Basic\s+)[A-Za-z0-9+/=]{8,}"),
    (":", r"(?P<keep>:)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),  # Telegram: <bot id>:<35 characters>
    (".", r"(?P<keep>\.)[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),  # Discord: <user id>.<time>.<hmac>
)
_TOKEN_SHAPES = tuple((needle, re.compile(pattern, re.ASCII)) for needle, pattern in _SHAPES)
# What must stand right before a shape (checked on the text before the match): a Telegram token's
# numeric bot id, a Discord token's base64 user id; a word boundary for the others.
_BEFORE = {
    ":": re.compile(r"(?<![0-9])[0-9]{8,10}$"),
    ".": re.compile(r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}$"),
}
_WORD_CHAR = re.compile(r"[A-Za-z0-9]")


def _token(match: re.Match[str]) -> str:
    text, start = match.string, match.start()
    keep = match.groupdict().get("keep") or ""
    before = _BEFORE.get(keep)
    if before is not None:
        if not before.search(text, max(0, start - 28), start):
            return match.group(0)
    elif start and _WORD_CHAR.match(text, start - 1):
        return match.group(0)  # inside a longer word: `task-...`, `mysk-...`
    return keep + MASK


def mask_text(text: str) -> str:
    """`text` with every URL's credentials (`redact_url`) and every token-shaped word masked."""
    text = redact_text(text)
    if len(text) < 16:
        return text  # too short to hold a token
    for needle, shape in _TOKEN_SHAPES:
        if needle in text:
            text = shape.sub(_token, text)
    return text


# --- URLs ------------------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """`url` with its user-info and every query value replaced by ***; other URLs unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an invalid IPv6 literal: mask whatever sits before an '@'
        return re.sub(r"^([^/]*//)[^/@]*@", rf"\1{MASK}@", url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and (":" in userinfo or parts.scheme.lower() not in _SSH_SCHEMES):
        netloc = f"{MASK}@{host}"
    query = "&".join(
        f"{name}={MASK}" if sep else name for name, sep, _ in (item.partition("=") for item in parts.query.split("&") if item)
    )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Every `scheme://...` URL inside `text` redacted (see redact_url)."""
    if "://" not in text:
        return text
    if len(text) < 4096 or "\n" not in text:
        return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    # A long text (a whole output): only its lines with a URL (the pattern is slow on long runs of words).
    # One long line is matched whole above: splitting it again would recurse forever.
    return "\n".join(redact_text(line) if "://" in line else line for line in text.split("\n"))


def without(text: str, secrets: Iterable[str]) -> str:
    """`text` without the credentials a call knows it sent (a ticket, a peer key), each replaced by
    `(redacted)`, and without any credential inside a URL (`redact_text`)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "(redacted)")
    return redact_text(text)


# --- outputs ---------------------------------------------------------------------------------------


# --- terminal controls ---------------------------------------------------------------------------

# What a verb itself sends to a terminal: the colours of `reporting.Palette` and the progress line's
# "erase to the end of the line" (`progress.py`). Any other control character (a cursor move, a line
# erase, a carriage return, a bell, C1) comes from a name someone wrote (a routine, a job, a key)
# and could rewrite what a reviewer sees: it is shown escaped (`\x1b`), never sent.
_OWN_SEQUENCES = frozenset({"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m", "\x1b[K"})
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """`text` with every terminal control escaped but this tool's own (a carriage return only at the
    start of a write: the progress line)."""
    lead = "\r" if text.startswith("\r") else ""
    body = text[len(lead) :]
    if _CONTROL.search(body) is None:
        return text
    return lead + _CONTROL.sub(_escaped, body)


def _escaped(match: re.Match[str]) -> str:
    found = match.group()
    if found in _OWN_SEQUENCES:
        return found
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c for c in found)


class MaskedStream:
    """A text stream that masks every write (`mask_text`): what a verb prints, logs and reports on
    stdout and stderr, whatever the code path that printed it (the last line of defence: values are
    masked where they are made, with their keys, by `masked`); and escapes terminal controls that
    are not its own (`terminal_safe`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_safe(mask_text(text)))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self.stream, name)


@contextlib.contextmanager
def masked_output() -> Iterator[None]:
    """stdout and stderr masked for the duration (each wrapped once, restored after)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if isinstance(s, MaskedStream) else MaskedStream(s) for s in saved)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
