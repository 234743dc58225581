"""Which URLs Hermes lets carry credentials in the clear (docs/hermes/gateway.md, `validate_room_link_url`)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def clear_text_allowed(url: str) -> bool:
    """RoomLink's rule for a URL that carries credentials: https anywhere, plain http only toward
    loopback (`localhost`, `*.localhost`, a loopback address)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http" or not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
