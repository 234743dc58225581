"""Redaction of credentials in URLs, for everything hermes-fleet shows or keeps.

A URL given on the command line (`watch --git`, `--gateway`) may carry a credential: a
user-info part (`https://TOKEN@host/...`, `https://user:password@host/...`) or a query value
(`?access_token=...`). The tool still uses the URL as given; every message, log line, status
file and state file gets `redact_url(url)` instead (`https://***@host/...?access_token=***`).
`redact_text` does the same for every URL inside a free text, such as git's own error message.
Manifests may not carry credentials in URLs at all (validation refuses them), so this module
guards only what the command line and outside tools hand in.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_SSH_SCHEMES = ("ssh", "git+ssh", "ssh+git")  # ssh://git@host/...: a user name, not a credential


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
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
