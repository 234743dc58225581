"""RoomLink: asking another machine's gateway to issue a grant that seats one of its bots in a room here.

A member on another machine is a peer target of the room. Its own gateway issues the grant (the
"invitation") for exactly one room, member id and profile; the room's gateway registers it with
`groups.peer.register`, which probes the member's gateway with that grant (docs/hermes/gateway.md,
#peer-members). The invitation is the member gateway's API server route
`POST /p/<profile>/v1/room-members/invitations`, authenticated with that profile's API server key:
the peer key this fleet already declares. This module makes that call, and revokes a grant that
was issued but could not be used.

Grants and keys are bearer credentials: they never appear in a message, a log line or a plan,
and a grant is never stored (only its sha256 fingerprint, which the gateway also reports).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from controller.errors import RoomLinkError
from controller.hermes.urls import clear_text_allowed
from controller.redact import without

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class Invitation:
    """A grant issued by the member's gateway, with the catalog it was issued under."""

    grant: str = field(repr=False)
    target_profile: str
    catalog: Mapping[str, Any]
    status_expires_at: float

    @property
    def fingerprint(self) -> str:
        """sha256 of the grant: what the room's gateway reports as the route's `grant_sha256`."""
        return hashlib.sha256(self.grant.encode()).hexdigest()

    @property
    def endpoint(self) -> Mapping[str, Any]:
        endpoint = self.catalog.get("endpoint")
        return endpoint if isinstance(endpoint, dict) else {}


def _route(base: str, profile: str, path: str) -> str:
    return f"{base.rstrip('/')}/p/{quote(profile, safe='')}{path}"


def invite(
    peer: str,
    url: str,
    key: str,
    profile: str,
    *,
    room_id: str,
    install_id: str,
    epoch: int,
    member_id: str,
    ttl: int,
    status_ttl: int,
    timeout: float = DEFAULT_TIMEOUT,
) -> Invitation:
    """Ask peer `peer` (its API server at `url`) for a grant seating its profile `profile`."""
    import httpx

    where = f"peer {peer!r} ({url})"
    if not clear_text_allowed(url):
        raise RoomLinkError(
            f"{where}: refusing to send the peer key over plain http to another machine",
            hint="serve that machine's API server over https and write https:// in the peer's url",
        )
    body = {
        "room_id": room_id,
        "home_install_id": install_id,
        "authority_gateway_id": install_id,
        "authority_epoch": epoch,
        "member_id": member_id,
        "ttl_seconds": ttl,
        "status_ttl_seconds": status_ttl,
    }
    try:
        reply = httpx.post(
            _route(url, profile, "/v1/room-members/invitations"),
            json=body,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            trust_env=False,
            follow_redirects=False,
        )
    except httpx.HTTPError as exc:
        raise RoomLinkError(
            f"{where} cannot be reached for an invitation: {without(str(exc) or type(exc).__name__, (key,))}",
            hint="check that the machine is up and its API server listens at that URL; the next apply tries again",
            transient=True,
        ) from None
    data = _json(reply)
    if reply.status_code in (401, 403):
        raise RoomLinkError(
            f"{where} refused the peer key for its profile {profile!r} (HTTP {reply.status_code})",
            hint=f"the key of peer {peer!r} must be the API_SERVER_KEY of profile {profile!r} on that machine (for a bot "
            f"of this fleet: set its env API_SERVER_KEY from the same secret as the peer key, apply on that machine "
            f"and restart its gateway)",
        )
    if reply.status_code == 404:
        raise RoomLinkError(
            f"{where} has no RoomLink invitation route for profile {profile!r} (HTTP 404)",
            hint="the peer's url must be the API server of the gateway that serves that profile (a gateway that "
            "serves several profiles answers under /p/<profile>); if it is, update Hermes on that machine "
            "(`hermes update`) and restart its gateway",
        )
    if reply.status_code != 201:
        error = data.get("error")
        said = without(str((error.get("message") if isinstance(error, dict) else None) or f"HTTP {reply.status_code}"), (key,))
        raise RoomLinkError(
            f"{where} would not issue an invitation for profile {profile!r}: {said}",
            hint="fix that on that machine (its plan shows the room's seat), then run apply here again",
        )
    grant, catalog = data.get("grant"), data.get("catalog")
    expires = data.get("status_expires_at")
    if (
        not isinstance(grant, str)
        or not grant
        or not isinstance(catalog, dict)
        or data.get("target_profile") != profile
        or not isinstance(expires, int | float)
    ):
        raise RoomLinkError(f"{where} answered the invitation with an unexpected shape", hint="update Hermes on that machine")
    return Invitation(grant=grant, target_profile=profile, catalog=catalog, status_expires_at=float(expires))


def revoke_exact(invitation: Invitation, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Retire exactly this grant on the member's gateway (best effort; it expires anyway).

    Never the scope-wide `/grants/revoke`: that route retires every grant of the room, member and
    profile issued until now, the one the room's route still uses included, and the member's
    reservation with them (docs/hermes/gateway.md#revoking-a-grant). A member gateway without
    `/grants/revoke-exact` (404) keeps the unused grant until it expires.
    """
    import httpx

    url = invitation.endpoint.get("url")
    if invitation.endpoint.get("available") is not True or not isinstance(url, str) or not clear_text_allowed(url):
        return False
    try:
        reply = httpx.post(
            _route(url, invitation.target_profile, "/v1/room-members/grants/revoke-exact"),
            json={},
            headers={"Authorization": f"HermesRoom {invitation.grant}"},
            timeout=timeout,
            trust_env=False,
            follow_redirects=False,
        )
    except httpx.HTTPError:
        return False
    return reply.status_code == 200 and _json(reply).get("revoked") is True


def _json(reply: Any) -> dict[str, Any]:
    try:
        data = reply.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
