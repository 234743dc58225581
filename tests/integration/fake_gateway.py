"""A loopback Hermes gateway for tests: a real control socket, a real WebSocket JSON-RPC server, and
(for cross-gateway members) a real HTTP API server with the RoomLink member routes.

It follows the server's rules as read in Hermes' source (public copies; facts only, no code copied).
Every rule below names the server function it mirrors; the facts themselves are written down in
docs/hermes/gateway.md. Sources:

- `tui_gateway/methods_groups.py` @ dokterdok/hermes-agent c326c5d: `_room_method` (typed room code
  + `data.reason` for a `HostedRoomError`, the generic code for anything else; the worker check comes
  first), `groups.capabilities`, `groups.create`, `groups.members.update`, `groups.policy.update`,
  `groups.state`, `groups.disband`, `groups.peer.register`;
- `tui_gateway/hosted_room_service.py` @ c326c5d: `HostedRoomService.local_profiles` (every folder
  under `profiles/`, dot-folders included), `create_room`, `update_members` (`_owned_room` first),
  `stop_room(require_acknowledged=True)`, `register_peer_route`, `status_with_grant_fingerprints`;
- `gateway/hosted_rooms.py` @ c326c5d: `create_room`, `rename_room`, `room_state`, `_room_row`
  (retired and purged: `RoomHistoryExpiredError`), `disband_room`, `_disband_replay`,
  `_prune_disbanded_rooms_locked` (90 days, 512 tombstones), `_room_from_row` (`latest_seq`);
- `gateway/hosted_room_membership.py` @ c326c5d: `update_members`;
- `gateway/hosted_room_responder_policy.py` @ c326c5d: `normalize_policy`, `update_policy`;
- `gateway/hosted_room_discussion.py` @ dokterdok 0894258: `validate_roster`, `_validate_member`,
  `_validate_member_target`;
- `gateway/hosted_rooms_common.py` @ NousResearch 4cb08f2: `identifier` (strip, then check);
- `gateway/control_socket.py` @ dokterdok 39c4d17: `handle_request_line`, `_session_ticket`,
  `_posix_peer_subject` (tickets only for an authenticated peer and a private home, 30 s);
- `gateway/platforms/api_server_room_grants.py` @ dokterdok 0b6fb69: the member routes
  `/v1/room-members/invitations` (Bearer API key), `/capabilities` (`_room_grant_claims`: revoked
  or no longer current is 403), `/grants/revoke` (`_handle_room_member_grant_revoke`: the grant's
  whole scope) and `/grants/revoke-exact` (`_handle_room_member_grant_revoke_exact`: that grant only);
- `gateway/hosted_room_grant_state.py` @ dokterdok a36d6fb: `revoke_grant_state(exact=...)`;
  `gateway/hosted_room_storage.py` @ dokterdok 90cfd57: `revoke_room_grant_scope` (every grant of
  the scope issued until now, and the scope's reservation), `revoke_room_grant_id`,
  `room_grant_is_revoked`, `peer_room_grant_is_current`, `reserve_peer_room`;
- `tui_gateway/hosted_room_service.py` @ dokterdok 3cea33a: `register_peer_route` retires the
  superseded grant with `revoke_grant_exact`; `revoke_room_routes` (disband) with the scope-wide
  `revoke_grant`;
- `tui_gateway/methods_groups.py` @ NousResearch 03b160e (the older gateway, `features` without
  `rename_revision` / `peer_route_grant_fingerprint`): `groups.rename` passes only room_id,
  event_id and name (no revision fence), `groups.peer.register` has no `expected_grant_sha256`,
  `groups.state` reports `service.status` (routes without `grant_sha256`);
- `gateway/hosted_room_peer.py` @ dokterdok 0b6fb69: `validate_room_link_url`, `catalog_mapping`,
  grant lifetimes; `tui_gateway/hosted_room_peer_http.py` @ 027dbe2: the `/p/<profile>` prefix.

Fault knobs: `lose_reply` (apply the write, drop the reply, close), `delay`, `reset_before` (close
before handling), `http_status` (fail the handshake), `refuse` (a typed refusal), `too_old` (no
groups.*), `methods`, `driver`, `busy` (rooms with queued or running work), `stopping` (rooms whose
work is still stopping), `retire_next_creates` (the next N create ids turn out to be purged
tombstones), `interfere` (another client's edit lands just before a method is handled),
`durable_runs`, `features` (drop one to act as a gateway without it), `restart_after` (apply the
write, lose its reply, and restart on another port with a new instance id). Test helpers: `edit`
(a Desktop edit), `age` (time passes, tombstones are purged as the worker does), `mint_ticket`
(what `hermes gateway ticket` prints), `route_status`, `restart`, `grant_alive` (whether the
member side would still accept a grant).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import hmac
import ipaddress
import json
import os
import re
import secrets
import socket
import stat
import threading
import time
import urllib.error
import urllib.request
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import yaml
from websockets.sync.server import serve

IDENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
READS = {"groups.capabilities", "groups.list", "groups.state"}
NEW_METHODS = [
    "groups.capabilities",
    "groups.list",
    "groups.create",
    "groups.state",
    "groups.rename",
    "groups.members.update",
    "groups.policy.update",
    "groups.disband",
    "groups.peer.register",
]  # the real list is longer (send, log, stop, peer.invite, …); these are the ones this fake implements
DEFAULT_POLICY = {
    "mode": "legacy_bounded",
    "default_responder": "all",
    "leader_member_id": None,
    "max_turns_per_window": 10,
    "window_seconds": 60,
}
WORKER_UNAVAILABLE = "Group Chat worker is unavailable. Restart the Hermes gateway and try again."
TICKET_TTL = 30.0  # control_socket._session_ticket: expires_in_seconds 30
RETENTION = 90 * 24 * 60 * 60  # hosted_rooms.DISBANDED_ROOM_RETENTION_SECONDS
MAX_TOMBSTONES = 512  # hosted_rooms.MAX_DISBANDED_ROOM_TOMBSTONES
MAX_ACTIVE = 256  # hosted_rooms.MAX_ACTIVE_ROOMS
REMOTE_FIELDS = {  # hosted_room_discussion._REMOTE_MEMBER_FIELDS
    "connectionId", "connectionKind", "connectionLabel", "connection_id", "connection_kind", "connection_label",
    "remoteSource", "route", "sourceMissing", "sourceReachable", "sourceScoped", "targetProfile", "target_profile",
}  # fmt: skip
TARGET_FIELDS = {"local": {"kind", "profile"}, "peer": {"kind", "peer_id", "installation_id", "profile", "capability_digest"}}
CATALOG_FIELDS = {
    "installation_id", "protocol_versions", "link_modes", "persistent_process", "text", "attachments",
    "execution_policy", "catalog_digest",
}  # fmt: skip
FEATURES = [
    "authority_epoch",
    "room_identity",
    "replayable_disband",
    "peer_route_grant_fingerprint",
    "peer_grant_renewal",
    "local_membership_revision",
    "historical_member_identity",
    "rename_revision",
    "responder_policy_v1",
]  # groups.capabilities @ c326c5d (the ones this fake implements)
MAX_DISPATCH_TTL = 24 * 60 * 60  # hosted_room_peer.MAX_DISPATCH_GRANT_TTL_SECONDS
MAX_STATUS_TTL = 30 * 24 * 60 * 60  # hosted_room_peer.MAX_STATUS_GRANT_TTL_SECONDS


class Refusal(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.reason = code, message, reason


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def room_link_url(value: Any) -> tuple[str, str] | None:
    """hosted_room_peer.validate_room_link_url: https anywhere, plain http only toward loopback."""
    raw = str(value or "").strip().rstrip("/")
    try:
        parts = urlsplit(raw)
        host = (parts.hostname or "").rstrip(".").lower()
        _ = parts.port
    except ValueError:
        return None
    if not host or parts.username or parts.password or parts.query or parts.fragment:
        return None
    if parts.scheme == "https":
        return raw, "tls"
    if parts.scheme != "http":
        return None
    try:
        if host == "localhost" or host.endswith(".localhost") or ipaddress.ip_address(host).is_loopback:
            return raw, "loopback"
    except ValueError:
        pass
    return None


def ident(value: Any, label: str, code: int, reason: str | None = None) -> str:
    """hosted_rooms_common.identifier: a string, stripped, 1..128 characters, the identifier shape."""
    if not isinstance(value, str):
        raise Refusal(code, f"{label} must be a string", reason)
    value = value.strip()
    if not value or len(value) > 128 or not IDENT.fullmatch(value):
        raise Refusal(code, f"invalid {label}", reason)
    return value


class FakeGateway:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.install_id = "install:fake-" + secrets.token_hex(4)
        self.instance_id = "inst-" + secrets.token_hex(4)
        self.rooms: dict[str, dict[str, Any]] = {}
        self.next_seq: dict[str, int] = {}
        self.retired: dict[str, float] = {}  # hosted_room_retired_ids: permanent, survives the purge
        self.events: dict[tuple[str, str], Any] = {}
        self.links: dict[tuple[str, str], dict[str, Any]] = {}  # hosted_room_links (room side)
        self.tickets: dict[str, float] = {}  # ticket -> monotonic expiry
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.handshakes: list[list[str]] = []
        self.http_calls: list[tuple[str, str]] = []  # (method, path) on the API server
        self.lock = threading.RLock()
        self.clock = 1764500000.0
        self.grant_secret = secrets.token_bytes(32)  # hosted_room_peer.gateway_room_grant_secret
        self.revoked_grants: set[str] = set()  # hosted_room_revoked_grant_ids (revoke-exact)
        self.revoked_scopes: dict[str, float] = {}  # hosted_room_revoked_grants: scope -> revoked_before
        self.revocations: list[tuple[str, str]] = []  # (route, grant_id) of each revoke asked for
        # hosted_room_peer_reservations: (room_id, member_id, target_profile) -> revoked (by a scope revoke)
        self.reservations: dict[tuple[str, str, str], bool] = {}
        # fault knobs
        self.lose_reply: set[str] = set()
        self.reset_before: set[str] = set()
        self.delay: dict[str, float] = {}
        self.http_status: int | None = None
        self.refuse: dict[str, tuple[int, str, str | None]] = {}
        self.too_old = False
        self.methods: list[str] = list(NEW_METHODS)
        self.driver = True
        self.busy: set[str] = set()
        self.stopping: set[str] = set()
        self.retire_next_creates = 0
        self.interfere: dict[str, Any] = {}  # method -> callable: another client's edit lands just before it
        self.durable_runs = True
        self.features: list[str] = list(FEATURES)
        self.restart_after: set[str] = set()
        self.ticket_ttl = TICKET_TTL
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._control: socket.socket | None = None
        self._control_thread: threading.Thread | None = None
        self._api: ThreadingHTTPServer | None = None
        self.port = 0

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, *, control_socket: bool = True, api_server: bool = False) -> FakeGateway:
        self._serve()
        if control_socket:
            self.start_control()
        if api_server:
            self.start_api()
        return self

    def _serve(self) -> None:
        self._server = serve(
            self._handler,
            "127.0.0.1",
            0,
            subprotocols=["hermes-gateway-v1"],
            process_request=self._process_request,
            compression=None,
        )
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def restart(self) -> None:
        """The gateway process restarts: a new instance id, its WebSocket on another port (the old
        port refuses at once), the same control socket path and the same rooms (durable)."""
        old, old_port = self._server, self.port
        old.socket.close()  # nothing listens on the old port any more
        self.instance_id = "inst-" + secrets.token_hex(4)
        while self.port == old_port:
            self._serve()
        threading.Thread(target=old.shutdown, daemon=True).start()  # waits for its handlers

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.stop_control()
        self.stop_api()
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def writes(self) -> list[str]:
        return [m for m, _ in self.calls if m not in READS]

    # --- control socket (gateway/control_socket.py @ 39c4d17) --------------------------------

    def start_control(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.home / "gateway.sock"
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(8)
        self._control = sock
        self._control_thread = threading.Thread(target=self._control_loop, args=(sock,), daemon=True)
        self._control_thread.start()

    def stop_control(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)  # wakes the accept(); close() alone does not
            with contextlib.suppress(OSError):
                self._control.close()
            self._control = None
            with contextlib.suppress(FileNotFoundError):
                (self.home / "gateway.sock").unlink()
        if self._control_thread is not None:
            self._control_thread.join(timeout=5)
            self._control_thread = None

    def _control_loop(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\n" not in data and len(data) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                with contextlib.suppress(OSError):
                    conn.sendall(self._control_line(data.split(b"\n")[0]))

    def _control_line(self, raw: bytes) -> bytes:
        """handle_request_line: one JSON line in, one out; failures are `<ExceptionType>: <text>`."""
        request_id: Any = None
        try:
            request = json.loads(raw.decode())
            if not isinstance(request, dict):
                raise ValueError("request must be a JSON object")
            request_id, verb = request.get("id"), request.get("verb")
            if verb == "identify":
                reply: dict[str, Any] = {"ok": True, "protocol": 1, "result": self.descriptor()}
            elif verb == "session-ticket":
                reply = {"ok": True, "protocol": 1, "result": self._session_ticket(request)}
            else:
                reply = {"ok": False, "error": f"unknown verb: {verb!r}", "protocol": 1, "supported_verbs": ["identify"]}
        except Exception as exc:
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "protocol": 1}
        if request_id is not None:
            reply["id"] = request_id
        return json.dumps(reply).encode() + b"\n"

    def descriptor(self) -> dict[str, Any]:
        home = str(self.home.resolve())
        return {
            "protocol": 1,
            "runtime_protocol": 1,
            "state": "ready",
            "instance_id": self.instance_id,
            "authority_epoch": 1,
            "api_origin": self.origin,
            "supervisor": "none",
            "served_profiles": [{"profile_id": home, "home": home}],
            "capabilities": ["session-authority-v1"],
            "hermes_home": home,
        }

    def _peer_is_trusted(self) -> bool:
        """_posix_peer_subject: no symlink on the home's path, a folder of this uid, mode & 0o077 == 0.

        (The peer's uid is ours: the client runs in this process.)"""
        try:
            info = self.home.lstat()
        except OSError:
            return False
        return (
            self.home.absolute() == self.home.resolve()
            and stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.getuid()
            and not info.st_mode & 0o077
        )

    def _session_ticket(self, request: dict[str, Any]) -> dict[str, Any]:
        """_session_ticket: single-use, 30 s, only for an authenticated peer on a private home."""
        if not self._peer_is_trusted():
            raise PermissionError("authenticated runtime bootstrap unavailable")
        if set(request) - {"protocol", "verb", "id", "params"} or request.get("protocol") != 1:
            raise PermissionError("invalid bootstrap envelope")
        params = request.get("params")
        if not isinstance(params, dict) or set(params) != {"profile_id", "instance_id", "purpose"}:
            raise PermissionError("invalid bootstrap parameters")
        if params["instance_id"] != self.instance_id:
            raise PermissionError("stale runtime instance")
        ticket = self.mint_ticket()
        return {
            "ticket": ticket,
            "expires_in_seconds": 30,
            "instance_id": self.instance_id,
            "profile_id": params["profile_id"],
            "runtime_protocol": 1,
        }

    def mint_ticket(self) -> str:
        """A fresh single-use interactive ticket (what `hermes gateway ticket` prints on that machine)."""
        ticket = "tkt-" + secrets.token_urlsafe(18)
        with self.lock:
            self.tickets[ticket] = time.monotonic() + self.ticket_ttl
        return ticket

    # --- WebSocket ---------------------------------------------------------------------------

    def _process_request(self, connection: Any, request: Any) -> Any:
        if self.http_status is not None:
            return connection.respond(HTTPStatus(self.http_status), "injected failure\n")
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        self.handshakes.append(offered)
        tickets = [p[len("hermes-gateway-ticket.") :] for p in offered if p.startswith("hermes-gateway-ticket.")]
        if "hermes-gateway-v1" not in offered or len(tickets) != 1:
            return connection.respond(HTTPStatus.FORBIDDEN, "ticket_invalid\n")
        with self.lock:
            expires = self.tickets.pop(tickets[0], None)  # single use on every transport
        if expires is None or time.monotonic() > expires:
            return connection.respond(HTTPStatus.FORBIDDEN, "ticket_invalid\n")
        return None

    def _handler(self, ws: Any) -> None:
        ws.send(json.dumps({"jsonrpc": "2.0", "method": "event", "params": {"type": "gateway.ready", "payload": {"skin": {}}}}))
        for raw in ws:
            message = json.loads(raw)
            rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
            if method in self.reset_before:
                self.reset_before.discard(method)
                ws.close()
                return
            with self.lock:
                self.calls.append((method, copy.deepcopy(params)))
                try:
                    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": self.dispatch(method, params)}
                except Refusal as exc:
                    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
                    if exc.reason:
                        error["data"] = {"reason": exc.reason}
                    reply = {"jsonrpc": "2.0", "id": rid, "error": error}
            if method in self.restart_after:
                self.restart_after.discard(method)
                self.restart()
                ws.close()  # applied, reply lost, and the gateway is elsewhere now
                return
            if method in self.lose_reply:
                self.lose_reply.discard(method)
                ws.close()  # applied, reply lost
                return
            if method in self.delay:
                time.sleep(self.delay.pop(method))
            with contextlib.suppress(Exception):
                ws.send(json.dumps(reply))

    # --- groups.* ----------------------------------------------------------------------------

    WORKER: ClassVar[dict[str, int]] = dict.fromkeys(
        ("groups.create", "groups.members.update", "groups.policy.update", "groups.disband"), 4123
    )

    def dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in self.refuse:
            code, message, reason = self.refuse.pop(method)
            raise Refusal(code, message, reason)
        if self.too_old and method.startswith("groups."):
            raise Refusal(-32601, f"unknown method: {method}")
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if method not in self.methods or handler is None:
            raise Refusal(-32601, f"unknown method: {method}")
        if method in self.interfere:
            self.interfere[method]()
        # _room_method: a method that needs the live service answers its service code before anything else.
        if method in self.WORKER and not self.driver:
            raise Refusal(self.WORKER[method], WORKER_UNAVAILABLE)
        if method == "groups.peer.register" and not self.driver:
            raise Refusal(4121, "hosted room driver is unavailable")
        return handler(params)

    def _tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def _event(self, room_id: str, event_id: str | None = None, payload: Any = None) -> None:
        """One appended event: latest_seq grows (hosted_rooms._insert_event, next_seq + 1)."""
        self.next_seq[room_id] = self.next_seq.get(room_id, 1) + 1
        if event_id is not None:
            self.events[(room_id, event_id)] = payload

    def _view(self, room: dict[str, Any], *, latest: bool = True, idempotent: bool = False) -> dict[str, Any]:
        """hosted_rooms._room_from_row: latest_seq = next_seq - 1 whenever the row carries next_seq."""
        out = copy.deepcopy(room)
        out["idempotent"] = idempotent
        if latest:
            out["latest_seq"] = self.next_seq.get(room["room_id"], 1) - 1
        return out

    def _groups_capabilities(self, params: dict[str, Any]) -> dict[str, Any]:
        """groups.capabilities: `room_link` for the requested profile (default: the process profile)."""
        profile = str(params.get("profile") or "").strip() or "default"
        try:
            if not self.durable_runs:
                raise ValueError("durable run idempotency storage is required")
            catalog = self.catalog(profile)
            room_link: dict[str, Any] = {"enabled": True, "profile": profile, "catalog": catalog, "endpoint": catalog["endpoint"]}
        except ValueError:
            # Every failure in that block reads as one of two reasons, whatever it was (a missing
            # profile, approvals off): methods_groups.py @ c326c5d.
            room_link = {
                "enabled": False,
                "reason": "gateway_roomlink_secret_unavailable" if self.durable_runs else "durable_run_storage_required",
            }
        return {
            "protocol_version": 2,
            "driver": self.driver,
            "persistent_process": bool(room_link.get("catalog", {}).get("persistent_process", False)),
            "authority_gateway_id": self.install_id,
            "room_link": room_link,
            "participant_tools": {"core": True, "native": False, "peer": False},
            "features": list(self.features),
            "methods": list(self.methods),
            "max_log_limit": 500,
        }

    def _groups_list(self, params: dict[str, Any]) -> dict[str, Any]:
        """hosted_rooms.list_rooms: purged tombstones are gone from the list, even with include_disbanded."""
        limit, offset = params.get("limit", 500), params.get("offset", 0)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 500:
            raise Refusal(5110, "limit must be between 1 and 500")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise Refusal(5110, "offset must be a non-negative integer")
        rooms = [r for r in self.rooms.values() if params.get("include_disbanded") is True or not r.get("disbanded_at")]
        rooms.sort(key=lambda r: (-r["updated_at"], r["room_id"]))
        page = rooms[offset : offset + limit]
        return {"rooms": [self._view(r) for r in page], "next_offset": offset + limit if len(page) == limit else None}

    # roster ------------------------------------------------------------------------------------

    def local_profiles(self) -> set[str]:
        """HostedRoomService.local_profiles @ c326c5d: `default` and EVERY folder under profiles/
        (dot-folders too; newer snapshots skip them, #106847)."""
        folder = self.home / "profiles"
        names = {"default"}
        if folder.is_dir():
            names |= {p.name for p in folder.iterdir() if p.is_dir()}
        return names

    def validate_roster(self, members: Any, code: int) -> list[dict[str, Any]]:
        """hosted_room_discussion.validate_roster; every failure is the method's generic code, no reason."""
        if not isinstance(members, list):
            raise Refusal(code, "members must be a list")
        if not 2 <= len(members) <= 6:
            raise Refusal(code, "members must contain between 2 and 6 entries")
        # Each local profile is itself checked as an identifier: a `profiles/.deleted` folder fails
        # every roster ("invalid local profile").
        known = {ident(p, "local profile", code) for p in sorted(self.local_profiles())}
        out: list[dict[str, Any]] = []
        targets: set[str] = set()
        handles = {"all", "everyone"}
        ids: set[str] = set()
        for i, raw in enumerate(members):
            if not isinstance(raw, dict):
                raise Refusal(code, f"member {i} must be an object")
            remote = sorted(set(raw) & REMOTE_FIELDS)
            if remote:
                raise Refusal(code, f"member {i} contains cross-gateway fields: {', '.join(remote)}")
            missing = sorted({"member_id", "profile", "handle"} - set(raw))
            if missing:
                raise Refusal(code, f"member {i} is missing fields: {', '.join(missing)}")
            unknown = sorted(set(raw) - {"member_id", "profile", "handle", "display_name", "target"})
            if unknown:
                raise Refusal(code, f"member {i} has unknown fields: {', '.join(unknown)}")
            member_id = ident(raw["member_id"], f"member {i} id", code)
            profile = ident(raw["profile"], f"member {i} profile", code)
            handle = ident(raw["handle"], f"member {i} handle", code)
            target = self._target(raw.get("target"), profile, known, i, code)
            display = raw.get("display_name", "")
            if not isinstance(display, str):
                raise Refusal(code, f"member {i} display_name must be a string")
            display = display.strip()
            if len(display) > 200:
                raise Refusal(code, f"member {i} display_name is too long")
            unique = "profiles" if target["kind"] == "local" else "targets"
            for key, seen, message in (
                (canonical(target).casefold(), targets, f"member {unique} must be unique"),
                (handle.casefold(), handles, "member handles must be unique and cannot reserve @all or @everyone"),
                (member_id.casefold(), ids, "member ids must be unique"),
            ):
                if key in seen:
                    raise Refusal(code, message)
                seen.add(key)
            norm = {"member_id": member_id, "profile": profile, "handle": handle, "target": target}
            if display:  # the service drops an empty display_name (create_room, update_members)
                norm["display_name"] = display
            out.append(norm)
        return out

    @staticmethod
    def _target(value: Any, profile: str, known: set[str], i: int, code: int) -> dict[str, Any]:
        """_validate_member_target: no target means a local profile of this gateway; a peer target
        has exactly kind, peer_id, installation_id, profile (= the member's) and a sha256 digest."""
        if value is None:
            if profile not in known:
                raise Refusal(code, f"member {i} profile '{profile}' is not local to this gateway")
            return {"kind": "local", "profile": profile}
        if not isinstance(value, dict):
            raise Refusal(code, f"member {i} target must be an object")
        kind = value.get("kind")
        if kind not in TARGET_FIELDS:
            raise Refusal(code, f"member {i} target kind must be local or peer")
        missing = sorted(TARGET_FIELDS[kind] - set(value))
        unknown = sorted(set(value) - TARGET_FIELDS[kind])
        if missing:
            raise Refusal(code, f"member {i} {kind} target is missing fields: {', '.join(missing)}")
        if unknown:
            raise Refusal(code, f"member {i} {kind} target has unknown fields: {', '.join(unknown)}")
        target_profile = ident(value["profile"], f"member {i} target profile", code)
        if kind == "local":
            if target_profile != profile or profile not in known:
                raise Refusal(code, f"member {i} local target does not match a local profile")
            return {"kind": "local", "profile": profile}
        if target_profile != profile:
            raise Refusal(code, f"member {i} peer target profile does not match member profile")
        if not isinstance(value["capability_digest"], str) or not DIGEST.fullmatch(value["capability_digest"]):
            raise Refusal(code, f"member {i} capability_digest must be a sha256 digest")
        return {
            "kind": "peer",
            "peer_id": ident(value["peer_id"], f"member {i} peer_id", code),
            "installation_id": ident(value["installation_id"], f"member {i} installation_id", code),
            "profile": target_profile,
            "capability_digest": value["capability_digest"],
        }

    # create / state / rename -------------------------------------------------------------------

    @staticmethod
    def _name(value: Any, code: int) -> str:
        """hosted_rooms._validate_room_name: stripped, 1..200 characters, any characters."""
        if not isinstance(value, str):
            raise Refusal(code, "name must be a string")
        value = value.strip()
        if not value or len(value) > 200:
            raise Refusal(code, "invalid room name")
        return value

    def _groups_create(self, params: dict[str, Any]) -> dict[str, Any]:
        """HostedRoomService.create_room -> hosted_rooms.create_room."""
        members = self.validate_roster(params.get("members"), 5111)
        room_id = ident(params.get("room_id"), "room_id", 4110)
        name = self._name(params.get("name"), 4110)
        if self.retire_next_creates > 0 and room_id not in self.rooms and room_id not in self.retired:
            # Fault: this id turns out to belong to a room that was disbanded and purged long ago.
            self.retire_next_creates -= 1
            self.retired[room_id] = self.clock - RETENTION - 1
        if room_id in self.retired:
            raise Refusal(4110, "room_id belongs to a disbanded room")
        existing = self.rooms.get(room_id)
        if existing:
            if existing.get("disbanded_at"):
                raise Refusal(4110, "room_id belongs to a disbanded room")
            if existing["name"] != name or canonical(existing["members"]) != canonical(members):
                raise Refusal(4110, "room_id already exists with different state")
            if existing["authority_gateway_id"] != self.install_id:
                raise Refusal(4110, "room_id already belongs to a different authority")
            return {"room": self._view(existing, idempotent=True)}
        if sum(1 for r in self.rooms.values() if not r.get("disbanded_at")) >= MAX_ACTIVE:
            raise Refusal(4110, "This host has too many active Group Chats. Delete one and try again.")
        now = self._tick()
        room = {
            "room_id": room_id,
            "name": name,
            "members": members,
            "retired_members": [],
            "responder_policy": {},
            "authority_gateway_id": self.install_id,
            "authority_epoch": 1,
            "revision": 1,
            "created_at": now,
            "updated_at": now,
        }
        self.rooms[room_id] = room
        self.next_seq[room_id] = 1  # create appends no event
        return {"room": self._view(room, latest=False)}  # a fresh create's row has no next_seq

    def _row(self, room_id: str, code: int) -> dict[str, Any]:
        """hosted_rooms._room_row: a retired id whose row was purged is `room_history_expired`."""
        room = self.rooms.get(room_id)
        if room is None:
            if room_id in self.retired:
                raise Refusal(code, "Group Chat history expired; room_id remains permanently retired", "room_history_expired")
            raise Refusal(code, "hosted room not found")
        return room

    def _live(self, room_id: str, code: int) -> dict[str, Any]:
        room = self._row(room_id, code)
        if room.get("disbanded_at"):
            raise Refusal(code, "hosted room not found")
        return room

    def _groups_state(self, params: dict[str, Any]) -> dict[str, Any]:
        """groups.state: driver_status (with grant fingerprints) only while the worker runs and the room is live."""
        room_id = ident(params.get("room_id"), "room_id", 4114)
        room = self._row(room_id, 4114)
        if room.get("disbanded_at") and params.get("include_disbanded") is not True:
            raise Refusal(4114, "hosted room not found")
        result: dict[str, Any] = {"room": self._view(room)}
        if self.driver and not room.get("disbanded_at"):
            result["driver_status"] = self._driver_status(room_id)
        return result

    def _driver_status(self, room_id: str) -> dict[str, Any]:
        """HostedRoomService.status_with_grant_fingerprints (`service.status`, no fingerprints,
        without `peer_route_grant_fingerprint`)."""
        routes: list[dict[str, Any]] = [
            {"room_id": rid, "member_id": mid, "status": link["status"]}
            for (rid, mid), link in sorted(self.links.items())
            if rid == room_id
        ]
        if "peer_route_grant_fingerprint" in self.features:
            for route in routes:
                route["grant_sha256"] = hashlib.sha256(self.links[(room_id, route["member_id"])]["grant"].encode()).hexdigest()
        working = room_id in self.busy or room_id in self.stopping
        return {"running": True, "working": working, "blocked": False, "counts": {}, "pending_actions": [], "peer_routes": routes}

    def _replay(self, room_id: str, event_id: str, payload: Any, code: int, conflict: str) -> dict[str, Any] | None:
        seen = self.events.get((room_id, event_id), None)
        if (room_id, event_id) not in self.events:
            return None
        if canonical(seen) != canonical(payload):
            raise Refusal(code, conflict)
        return {"room": {**self._view(self.rooms[room_id], idempotent=True), "event": {"idempotent": True}}}

    def _bump(self, room: dict[str, Any]) -> None:
        room["revision"] += 1
        room["updated_at"] = self._tick()

    @staticmethod
    def _revision(value: Any, code: int, *, required: bool) -> int | None:
        """hosted_rooms._require_positive_int."""
        if value is None and not required:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Refusal(code, "expected_revision must be a positive integer")
        return value

    def _groups_rename(self, params: dict[str, Any]) -> dict[str, Any]:
        """hosted_rooms.rename_room: replay before the revision fence; names are stripped. Without
        `rename_revision` (NousResearch 03b160e) the method never passes `expected_revision` on."""
        room_id = ident(params.get("room_id"), "room_id", 4117)
        event_id = ident(params.get("event_id"), "event_id", 4117)
        name = self._name(params.get("name"), 4117)
        fenced = "rename_revision" in self.features
        expected = self._revision(params.get("expected_revision") if fenced else None, 4117, required=False)
        room = self._live(room_id, 4117)
        payload = {"name": name, **({"expected_revision": expected} if expected is not None else {})}
        replay = self._replay(room_id, event_id, payload, 4117, "event_id already exists with different immutable content")
        if replay:
            return replay
        if expected is not None and expected != room["revision"]:
            raise Refusal(4117, "room revision changed; reload before renaming")
        room["name"] = name
        self._bump(room)
        self._event(room_id, event_id, payload)
        return {"room": {**self._view(room), "event": {"kind": "room.renamed"}}}

    # members / policy --------------------------------------------------------------------------

    def _groups_members_update(self, params: dict[str, Any]) -> dict[str, Any]:
        """HostedRoomService.update_members (`_owned_room` first) -> hosted_room_membership.update_members."""
        room_id = ident(params.get("room_id"), "room_id", 4124)
        self._live(room_id, 4124)
        event_id = ident(params.get("event_id"), "event_id", 4124)
        expected = self._revision(params.get("expected_revision"), 4124, required=True)
        members = self.validate_roster(params.get("members"), 5120)
        room = self._live(room_id, 4124)
        payload = {"members": members, "expected_revision": expected}
        replay = self._replay(room_id, event_id, payload, 4124, "event_id already exists with different membership")
        if replay:
            return replay
        if expected != room["revision"]:
            raise Refusal(4124, "room revision changed; reload before editing membership")
        if any(m["target"].get("kind") == "peer" for m in [*room["members"], *members]):
            raise Refusal(
                4124, "peer membership changes require route revocation; not supported yet", "room_membership_peer_unsupported"
            )
        retired = {m["member_id"].casefold() for m in room["retired_members"]}
        old = {m["member_id"]: m for m in room["members"]}
        for m in members:
            if m["member_id"].casefold() in retired:
                raise Refusal(4124, "retired member IDs cannot be reused")
            if m["member_id"] in old and canonical(old[m["member_id"]]) != canonical(m):
                raise Refusal(4124, "member identity is immutable; use a new member ID")
        if room_id in self.busy or room_id in self.stopping:
            raise Refusal(4124, "Stop outstanding room work before changing membership", "room_membership_busy")
        active = {m["member_id"] for m in members}
        leader = room["responder_policy"].get("leader_member_id")
        if leader is not None and leader not in active:  # whatever default_responder is
            raise Refusal(4124, "Change responder policy before removing its leader")
        room["retired_members"] += [m for mid, m in old.items() if mid not in active]
        room["members"] = members
        self._bump(room)
        self._event(room_id, event_id, payload)
        return {"room": {**self._view(room), "event": {"kind": "room.members_changed"}}}

    def _groups_policy_update(self, params: dict[str, Any]) -> dict[str, Any]:
        """groups.policy.update -> hosted_room_responder_policy.update_policy / normalize_policy."""
        if set(params) != {"room_id", "event_id", "expected_revision", "policy"}:
            raise Refusal(5120, "policy update requires exactly room_id, event_id, expected_revision, policy")
        room_id = ident(params.get("room_id"), "room_id", 4124)
        event_id = ident(params.get("event_id"), "event_id", 4124)
        expected = self._revision(params.get("expected_revision"), 4124, required=True)
        room = self._live(room_id, 4124)
        policy = params["policy"]
        if not isinstance(policy, dict) or set(policy) != set(DEFAULT_POLICY):
            raise Refusal(4124, "responder policy requires exactly the supported policy fields")
        if policy["mode"] not in ("legacy_bounded", "event_driven"):
            raise Refusal(4124, "unsupported responder policy mode")
        if policy["default_responder"] not in ("all", "leader", "mentions_only"):
            raise Refusal(4124, "unsupported default responder")
        for key, high in (("max_turns_per_window", 32), ("window_seconds", 3600)):
            if type(policy[key]) is not int or not 1 <= policy[key] <= high:
                raise Refusal(4124, f"invalid responder policy {key}")
        leader = policy["leader_member_id"]
        if leader is not None and (not isinstance(leader, str) or leader not in {m["member_id"] for m in room["members"]}):
            raise Refusal(4124, "leader member is unavailable")
        if policy["default_responder"] == "leader" and leader is None:
            raise Refusal(4124, "leader responder requires leader_member_id")
        payload = {"policy": policy, "expected_revision": expected}
        replay = self._replay(room_id, event_id, payload, 4124, "event_id already exists with different immutable content")
        if replay:
            return replay
        if expected != room["revision"]:
            raise Refusal(4124, "room revision changed; reload before editing policy")
        if any(m["target"].get("kind") == "peer" for m in room["members"]):
            raise Refusal(4124, "peer responder policy replication is unsupported")
        if room_id in self.busy or room_id in self.stopping:
            raise Refusal(4124, "Stop outstanding room work before changing policy")
        room["responder_policy"] = dict(policy)
        self._bump(room)
        self._event(room_id, event_id, payload)
        return {"room": {**self._view(room), "event": {"kind": "room.policy_changed"}}}

    # disband and tombstones --------------------------------------------------------------------

    def _groups_disband(self, params: dict[str, Any]) -> dict[str, Any]:
        """groups.disband: stop (acknowledged), revoke peer routes, tombstone; purged ids replay as expired."""
        room_id = ident(params.get("room_id"), "room_id", 4113)
        room = self.rooms.get(room_id)
        if room is None:
            if room_id in self.retired:  # _disband_replay of a retired, purged room
                return {
                    "tombstone": {
                        "room_id": room_id,
                        "disbanded_at": self.retired[room_id],
                        "idempotent": True,
                        "history_expired": True,
                    }
                }
            raise Refusal(4113, "hosted room not found")
        if room.get("disbanded_at"):
            return {"tombstone": {"room_id": room_id, "disbanded_at": room["disbanded_at"], "idempotent": True}}
        cancel = ident(params.get("cancel_id") or "room-disbanded", "cancel_id", 4113)
        stop_id = "room-stop:" + hashlib.sha256(cancel.encode()).hexdigest()[:32]
        if (room_id, stop_id) not in self.events:  # request_room_stop is idempotent on its event id
            self._event(room_id, stop_id, {"cancel_id": cancel})
        if room_id in self.stopping:  # stop_room(require_acknowledged=True): a RuntimeError, the generic code
            raise Refusal(5114, "room work is still stopping; retry deletion after Stop completes")
        for (rid, mid), link in list(self.links.items()):  # revoke_room_routes: the remote revocation is the boundary
            if rid != room_id:
                continue
            status = self._peer_call(
                link["target_url"], link["target_profile"], "/v1/room-members/grants/revoke", link["grant"], {}
            )
            if status not in (200, 401, 403):
                raise Refusal(5114, f"peer room grant revocation failed (HTTP {status})")
            del self.links[(rid, mid)]
        now = self._tick()
        room["disbanded_at"] = now
        room["updated_at"] = now
        room["revision"] += 1
        self._event(room_id, "system:room-disbanded", {"room_id": room_id})
        self.retired[room_id] = now
        self._prune(now)
        return {
            "tombstone": {
                "room_id": room_id,
                "disbanded_at": now,
                "idempotent": False,
                "event": {"kind": "room.disbanded", "event_id": "system:room-disbanded"},
            }
        }

    def _prune(self, now: float) -> None:
        """_prune_disbanded_rooms_locked: rows older than 90 days or beyond the newest 512 go; ids stay retired."""
        gone = sorted((r for r in self.rooms.values() if r.get("disbanded_at")), key=lambda r: (-r["disbanded_at"], r["room_id"]))
        purge = {r["room_id"] for r in gone[MAX_TOMBSTONES:]}
        purge |= {r["room_id"] for r in gone if r["disbanded_at"] <= now - RETENTION}
        for room_id in purge:
            self.retired[room_id] = self.rooms[room_id]["disbanded_at"]
            del self.rooms[room_id]
            self.next_seq.pop(room_id, None)

    # peer members: the room's side ----------------------------------------------------------------

    def _groups_peer_register(self, params: dict[str, Any]) -> dict[str, Any]:
        """groups.peer.register: validate the URL and catalog, probe the target with the grant, check
        the grant's scope against the room, then HostedRoomService.register_peer_route. Every
        failure is the generic 5120 (no room code)."""
        checked = room_link_url(params.get("target_url"))
        if checked is None:
            raise Refusal(5120, "target_url must use https outside the local machine")
        target_url, security = checked
        catalog = params.get("catalog")
        self.check_catalog(catalog, 5120)
        if 2 not in catalog["protocol_versions"]:
            raise Refusal(5120, "target does not support RoomLink protocol v2")
        if "direct" not in catalog["link_modes"]:
            raise Refusal(5120, "target does not support a direct RoomLink")
        target_profile = str(params.get("target_profile") or "")
        grant = str(params.get("grant") or "")
        # Without `peer_route_grant_fingerprint` (NousResearch 03b160e) the method drops it.
        expected = params.get("expected_grant_sha256") if "peer_route_grant_fingerprint" in self.features else None
        if expected is not None and expected and not DIGEST.fullmatch(str(expected)):
            raise Refusal(5120, "expected_grant_sha256 must be a sha256 digest")
        status, probe = self._peer_get(target_url, target_profile, "/v1/room-members/capabilities", grant)
        if status != 200:
            raise Refusal(5120, f"peer room authorization failed (HTTP {status})")
        if canonical(probe.get("catalog")) != canonical(catalog):
            raise Refusal(5120, "target capability catalog changed during setup")
        room_id, member_id = str(params.get("room_id") or ""), str(params.get("member_id") or "")
        room = self.rooms.get(room_id)
        if room is None or room.get("disbanded_at"):
            raise Refusal(5120, "hosted room not found")
        scope = {
            "room_id": room_id,
            "home_install_id": self.install_id,
            "authority_gateway_id": room["authority_gateway_id"],
            "member_id": member_id,
            "target_profile": target_profile,
        }
        if any(probe.get(k) != v for k, v in scope.items()) or int(probe.get("authority_epoch") or 0) != room["authority_epoch"]:
            raise Refusal(5120, "room grant scope does not match this route")
        previous = self.links.get((room_id, member_id))
        previous_hash = hashlib.sha256(previous["grant"].encode()).hexdigest() if previous else ""
        incoming = hashlib.sha256(grant.encode()).hexdigest()
        if expected is not None and previous_hash not in {expected, incoming}:
            raise Refusal(5120, "peer route changed during reconnect")
        if previous is not None and previous["grant"] != grant:
            # The superseded grant is revoked exactly on its target before the new one is saved
            # (register_peer_route: revoke_grant_exact, never the scope the new grant shares).
            self._peer_call(
                previous["target_url"], previous["target_profile"], "/v1/room-members/grants/revoke-exact", previous["grant"], {}
            )
        self.links[(room_id, member_id)] = {
            "target_url": target_url,
            "target_profile": target_profile,
            "grant": grant,
            "catalog": copy.deepcopy(catalog),
            "status": "ready",
        }
        return {
            "registered": True,
            "mode": "direct",
            "transport_security": security,
            "target_install_id": catalog["installation_id"],
            "target_profile": target_profile,
        }

    @staticmethod
    def check_catalog(catalog: Any, code: int) -> None:
        """GatewayRoomCatalog.from_mapping: exact fields and a digest over the rest."""
        if not isinstance(catalog, dict) or not CATALOG_FIELDS <= set(catalog) <= CATALOG_FIELDS | {"endpoint"}:
            raise Refusal(code, "capability catalog fields are invalid")
        body = {k: v for k, v in catalog.items() if k != "catalog_digest"}
        if hashlib.sha256(canonical(body).encode()).hexdigest() != catalog["catalog_digest"]:
            raise Refusal(code, "catalog_digest does not match the catalog")

    @staticmethod
    def _peer_url(base: str, profile: str, path: str) -> str:
        """PeerRunsHTTPClient: requests go to `<base>/p/<target_profile><path>`."""
        return f"{base.rstrip('/')}/p/{profile}{path}" if profile else f"{base.rstrip('/')}{path}"

    def _peer_call(self, base: str, profile: str, path: str, grant: str, body: Any) -> int:
        request = urllib.request.Request(
            self._peer_url(base, profile, path),
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"HermesRoom {grant}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except OSError:
            return 0

    def _peer_get(self, base: str, profile: str, path: str, grant: str) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(self._peer_url(base, profile, path), headers={"Authorization": f"HermesRoom {grant}"})
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return int(reply.status), json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), {}
        except OSError:
            return 0, {}

    def route_status(self, room_id: str, member_id: str, status: str) -> None:
        """What the worker records when a peer route needs reauthorization (or is unreachable)."""
        with self.lock:
            self.links[(room_id, member_id)]["status"] = status

    # peer members: the member's side (the API server) ---------------------------------------------

    def profile_home(self, profile: str) -> Path | None:
        if profile == "default":
            return self.home
        if not IDENT.fullmatch(profile):
            return None
        path = self.home / "profiles" / profile
        return path if path.is_dir() else None

    def profile_config(self, profile: str) -> dict[str, Any]:
        home = self.profile_home(profile)
        try:
            data = yaml.safe_load((home / "config.yaml").read_text()) if home else None
        except (OSError, yaml.YAMLError):
            data = None
        return data if isinstance(data, dict) else {}

    def api_key(self, profile: str) -> str:
        """The profile's own API_SERVER_KEY (its secret scope: the profile's .env)."""
        home = self.profile_home(profile)
        if home is None:
            return ""
        try:
            lines = (home / ".env").read_text().splitlines()
        except OSError:
            return ""
        for line in lines:
            key, sep, value = line.removeprefix("export ").partition("=")
            if sep and key.strip() == "API_SERVER_KEY":
                return value.strip().strip('"').strip("'")
        return ""

    def catalog(self, profile: str) -> dict[str, Any]:
        """catalog_mapping for one served profile; ValueError when it cannot be built."""
        if self.profile_home(profile) is None:
            raise ValueError(f"profile '{profile}' is unavailable")
        config = self.profile_config(profile)
        approvals = (config.get("approvals") or {}).get("mode", "smart") if isinstance(config.get("approvals"), dict) else "smart"
        if approvals == "off":
            raise ValueError("remote room execution requires manual or smart approvals")
        # _configured_room_link_url: the profile's gateway.room_link_url, else the root's.
        configured = None
        for source in (config, self.profile_config("default")):
            gateway = source.get("gateway") if isinstance(source.get("gateway"), dict) else {}
            if str(gateway.get("room_link_url") or "").strip():
                configured = gateway["room_link_url"]
                break
        if configured is None:
            endpoint: dict[str, Any] = {"available": False, "reason": "not_configured"}
        elif (checked := room_link_url(configured)) is None:
            endpoint = {"available": False, "reason": "invalid_configuration"}
        else:
            endpoint = {"available": True, "url": checked[0], "transport_security": checked[1]}
        policy = {"target_profile": profile, "approval_mode": approvals}
        policy["policy_digest"] = hashlib.sha256(canonical(policy).encode()).hexdigest()
        value = {
            "installation_id": self.install_id,
            "protocol_versions": [2],
            "link_modes": ["direct"],
            "persistent_process": True,
            "text": True,
            "attachments": False,
            "execution_policy": policy,
            "endpoint": endpoint,
        }
        value["catalog_digest"] = hashlib.sha256(canonical(value).encode()).hexdigest()
        return value

    def issue_grant(self, claims: dict[str, Any]) -> str:
        payload = canonical(claims).encode()
        return f"{b64(payload)}.{b64(hmac.new(self.grant_secret, payload, hashlib.sha256).digest())}"

    def decode_grant(self, token: str, *, for_revocation: bool = False) -> dict[str, Any] | None:
        """decode_room_grant: the signature, then the status horizon (unless revoking)."""
        encoded, sep, signature = token.partition(".")
        if not sep:
            return None
        try:
            payload = unb64(encoded)
            if not hmac.compare_digest(hmac.new(self.grant_secret, payload, hashlib.sha256).digest(), unb64(signature)):
                return None
            claims = json.loads(payload)
        except (ValueError, TypeError):
            return None
        if not for_revocation and time.time() >= float(claims["status_expires_at"]):
            return None
        return claims

    def start_api(self) -> None:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                gateway._serve_api(self, "GET")

            def do_POST(self) -> None:
                gateway._serve_api(self, "POST")

        self._api = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._api.daemon_threads = True
        threading.Thread(target=self._api.serve_forever, daemon=True).start()

    def stop_api(self) -> None:
        if self._api is not None:
            self._api.shutdown()
            self._api.server_close()
            self._api = None

    @property
    def api_url(self) -> str:
        assert self._api is not None
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    def _serve_api(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0]
        profile = "default"
        if match := re.fullmatch(r"/p/([^/]+)(/.*)", path):  # the multiplexed app's /p/<profile> routes
            profile, path = match.group(1), match.group(2)
        self.http_calls.append((method, path))
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length) or b"{}") if length else {}
        except ValueError:
            body = None
        auth = str(handler.headers.get("Authorization") or "")
        with self.lock:
            status, reply = self._api_route(method, path, profile, auth, body)
        data = json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _error(status: int, message: str, code: str) -> tuple[int, dict[str, Any]]:
        return status, {"error": {"message": message, "type": "invalid_request_error", "code": code}}

    def _api_route(self, method: str, path: str, profile: str, auth: str, body: Any) -> tuple[int, dict[str, Any]]:
        scheme, _, token = auth.partition(" ")
        if (method, path) == ("POST", "/v1/room-members/invitations"):
            return self._invitation(profile, scheme, token.strip(), body)
        if (method, path) == ("GET", "/v1/room-members/capabilities"):
            claims = self.decode_grant(token.strip()) if scheme.lower() == "hermesroom" else None
            if claims is None or claims["target_profile"] != profile:
                return self._error(401, "Room authorization is invalid or expired.", "invalid_room_grant")
            if not self.grant_alive(claims):
                return self._error(403, "Room authorization needs to be renewed.", "room_reauthorization_required")
            scope = {k: claims[k] for k in ("room_id", "home_install_id", "authority_gateway_id", "authority_epoch", "member_id")}
            return 200, {
                "object": "hermes.room_member.capabilities",
                **scope,
                "target_profile": profile,
                "catalog": self.catalog(profile),
            }
        if method == "POST" and path in ("/v1/room-members/grants/revoke", "/v1/room-members/grants/revoke-exact"):
            if body:
                return self._error(400, "Grant revoke accepts no fields.", "invalid_room_grant_revoke")
            claims = self.decode_grant(token.strip(), for_revocation=True) if scheme.lower() == "hermesroom" else None
            if claims is None or claims["target_profile"] != profile:
                return self._error(401, "Room authorization is invalid or expired.", "invalid_room_grant")
            self.revoke(claims, exact=path.endswith("-exact"))  # idempotent: a retried revoke succeeds
            return 200, {"object": "hermes.room_member.grant.revocation", "revoked": True}
        return self._error(404, "not found", "not_found")

    @staticmethod
    def scope_key(claims: dict[str, Any]) -> str:
        """hosted_room_storage._room_grant_scope_key: room, home, authority, epoch, member, target."""
        keys = ("room_id", "home_install_id", "authority_gateway_id", "authority_epoch", "member_id", "target_install_id")
        return canonical({k: str(claims[k]) for k in (*keys, "target_profile")})

    @staticmethod
    def reservation_key(claims: dict[str, Any]) -> tuple[str, str, str]:
        return str(claims["room_id"]), str(claims["member_id"]), str(claims["target_profile"])

    def revoke(self, claims: dict[str, Any], *, exact: bool) -> None:
        """revoke_grant_state: `revoke_room_grant_id` retires that one grant; `revoke_room_grant_scope`
        every grant of its scope issued until now, and the scope's reservation with them."""
        self.revocations.append(("revoke-exact" if exact else "revoke", claims["grant_id"]))
        if exact:
            self.revoked_grants.add(claims["grant_id"])
            return
        key = self.scope_key(claims)
        self.revoked_scopes[key] = max(self.revoked_scopes.get(key, 0.0), time.time())
        if self.reservation_key(claims) in self.reservations:
            self.reservations[self.reservation_key(claims)] = True

    def grant_alive(self, claims_or_grant: dict[str, Any] | str) -> bool:
        """_room_grant_claims: not revoked exactly, issued after its scope's fence, and its
        reservation still current (room_grant_is_revoked, peer_room_grant_is_current)."""
        claims = self.decode_grant(claims_or_grant) if isinstance(claims_or_grant, str) else claims_or_grant
        if claims is None or claims["grant_id"] in self.revoked_grants:
            return False
        if float(claims["issued_at"]) <= self.revoked_scopes.get(self.scope_key(claims), -1.0):
            return False
        return self.reservations.get(self.reservation_key(claims)) is False

    def _invitation(self, profile: str, scheme: str, token: str, body: Any) -> tuple[int, dict[str, Any]]:
        """_handle_room_member_invitation: the profile's API key; exactly the room authority fields."""
        key = self.api_key(profile)
        if scheme.lower() != "bearer" or not key or not hmac.compare_digest(token, key):
            return self._error(401, "Invalid API key", "invalid_api_key")
        required = {"room_id", "home_install_id", "authority_gateway_id", "authority_epoch", "member_id"}
        allowed = required | {"grant_id", "ttl_seconds", "status_ttl_seconds"}
        if not isinstance(body, dict) or set(body) - allowed or not required <= set(body):
            return self._error(400, "Invitation is missing required room authority fields.", "invalid_room_invitation")
        try:
            ttl = float(body.get("ttl_seconds", 3600))
            if not 60 <= ttl <= MAX_DISPATCH_TTL:
                raise ValueError("ttl_seconds must be between 60 and 86400")
            status_ttl = float(body.get("status_ttl_seconds", ttl))
            if not ttl <= status_ttl <= MAX_STATUS_TTL:
                raise ValueError("status_ttl_seconds must be at least ttl_seconds and no more than 2592000")
            catalog = self.catalog(profile)
            now = time.time()
            claims = {
                "version": 2,
                "grant_id": str(body.get("grant_id") or f"grant-{secrets.token_hex(16)}"),
                **{k: str(body[k]) for k in ("room_id", "home_install_id", "authority_gateway_id", "member_id")},
                "authority_epoch": int(body["authority_epoch"]),
                "target_install_id": self.install_id,
                "target_profile": profile,
                "execution_policy_digest": catalog["execution_policy"]["policy_digest"],
                "permissions": ["approve", "dispatch", "status", "stop"],
                "issued_at": now,
                "expires_at": now + ttl,
                "status_expires_at": now + status_ttl,
            }
        except (ValueError, TypeError) as exc:
            return self._error(400, str(exc), "invalid_room_invitation")
        self.reservations[self.reservation_key(claims)] = False  # reserve_peer_room: live again
        return 201, {
            "object": "hermes.room_member.invitation",
            "grant": self.issue_grant(claims),
            "target_profile": profile,
            "catalog": catalog,
            "expires_at": claims["expires_at"],
            "status_expires_at": claims["status_expires_at"],
        }

    # --- test helpers (edits "in the Desktop", time passing) ------------------------------------

    def edit(self, room_id: str, **changes: Any) -> None:
        with self.lock:
            room = self.rooms[room_id]
            room.update(changes)
            self._bump(room)
            self._event(room_id)

    def age(self, days: float) -> None:
        """Time passes; the worker purges old tombstones (as it does when it next starts)."""
        with self.lock:
            self.clock += days * 24 * 60 * 60
            self._prune(self.clock)

    def live(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return {rid: copy.deepcopy(r) for rid, r in self.rooms.items() if not r.get("disbanded_at")}
