"""A loopback Hermes gateway for tests: a real control socket and a real WebSocket JSON-RPC server.

Follows the contract in docs/hermes/gateway.md, as read from Hermes'
source (public copies; facts only, no code copied):

- `tui_gateway/methods_groups.py` @ dokterdok/hermes-agent 0b6fb696227f90ebda2a56b7be54960fc501351b
  (the `_room_method` envelope: typed room code + `data.reason`, generic code otherwise; worker
  4123/4115 messages) and @c326c5d per the contract (members.update, policy.update, rename revision);
- `gateway/hosted_rooms.py` @ NousResearch/hermes-agent 04fe135 and the fork @c326c5d (create
  idempotency, disband tombstones, revisions);
- `gateway/hosted_room_discussion.py` @ NousResearch/hermes-agent 027848d (validate_roster);
- `hermes_cli/gateway_runtime_discovery.py` @ d92a5a1 and `hermes_cli/gateway_client.py` @ 25e44a5
  (control socket `identify` / `session-ticket`, WebSocket subprotocol ticket);
- `gateway/control_socket.py` @ 0006718 (one JSON line per connection).

In-memory room store: idempotent create on room_id, revisions and expected_revision refusals,
roster rules (2-6 members), retired ids and disband tombstones, typed refusals. Fault knobs:
`lose_reply` (apply the write, drop the reply, close), `delay` (answer late), `reset_before`
(close before handling), `http_status` (fail the handshake), `refuse` (a typed refusal),
`too_old` (no groups.capabilities) and `methods` (a gateway without some groups.* methods).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import secrets
import socket
import threading
import time
from http import HTTPStatus
from pathlib import Path
from typing import Any

from websockets.sync.server import serve

IDENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
READS = {"groups.capabilities", "groups.list", "groups.state"}
NEW_METHODS = [
    "groups.capabilities",
    "groups.list",
    "groups.create",
    "groups.state",
    "groups.send",
    "groups.rename",
    "groups.members.update",
    "groups.policy.update",
    "groups.log",
    "groups.disband",
    "groups.stop",
    "groups.peer.invite",
    "groups.peer.revoke",
    "groups.peer.register",
]
DEFAULT_POLICY = {
    "mode": "legacy_bounded",
    "default_responder": "all",
    "leader_member_id": None,
    "max_turns_per_window": 10,
    "window_seconds": 60,
}


class Refusal(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.reason = code, message, reason


class FakeGateway:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.install_id = "install:fake-" + secrets.token_hex(4)
        self.instance_id = "inst-" + secrets.token_hex(4)
        self.rooms: dict[str, dict[str, Any]] = {}
        self.retired: set[str] = set()
        self.events: dict[tuple[str, str], Any] = {}
        self.tickets: set[str] = set()
        self.tokens: set[str] = set()  # long-lived credentials for explicit --gateway tests
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.handshakes: list[list[str]] = []
        self.lock = threading.Lock()
        self.clock = 1764500000.0
        # fault knobs
        self.lose_reply: set[str] = set()
        self.reset_before: set[str] = set()
        self.delay: dict[str, float] = {}
        self.http_status: int | None = None
        self.refuse: dict[str, tuple[int, str, str | None]] = {}
        self.too_old = False
        self.methods: list[str] = list(NEW_METHODS)
        self.driver = True
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._control: socket.socket | None = None
        self.port = 0

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, *, control_socket: bool = True) -> FakeGateway:
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
        if control_socket:
            self.start_control()
        return self

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.stop_control()
        if self._server is not None:
            self._server.shutdown()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def writes(self) -> list[str]:
        return [m for m, _ in self.calls if m not in READS]

    # --- control socket ----------------------------------------------------------------------

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
        threading.Thread(target=self._control_loop, args=(sock,), daemon=True).start()

    def stop_control(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.close()
            self._control = None
            with contextlib.suppress(FileNotFoundError):
                (self.home / "gateway.sock").unlink()

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
                try:
                    request = json.loads(data.split(b"\n")[0])
                    reply = {"ok": True, "protocol": 1, "id": 1, "result": self._control_reply(request)}
                except Refusal as exc:
                    reply = {"ok": False, "protocol": 1, "id": 1, "error": exc.message}
                except ValueError:
                    reply = {"ok": False, "protocol": 1, "id": 1, "error": "invalid request"}
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(reply).encode() + b"\n")

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

    def _control_reply(self, request: dict[str, Any]) -> dict[str, Any]:
        verb = request.get("verb")
        if verb == "identify":
            return self.descriptor()
        if verb == "session-ticket":
            params = request.get("params") or {}
            if set(params) != {"profile_id", "instance_id", "purpose"} or params["instance_id"] != self.instance_id:
                raise Refusal(0, "ticket request rejected")
            ticket = "tkt-" + secrets.token_urlsafe(18)
            with self.lock:
                self.tickets.add(ticket)
            return {"ticket": ticket, "profile_id": params["profile_id"], "instance_id": self.instance_id, "runtime_protocol": 1}
        raise Refusal(0, f"unknown verb {verb}")

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
            if tickets[0] in self.tickets:
                self.tickets.discard(tickets[0])  # single use
            elif tickets[0] not in self.tokens:
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
            if method in self.lose_reply:
                self.lose_reply.discard(method)
                ws.close()  # applied, reply lost
                return
            if method in self.delay:
                time.sleep(self.delay.pop(method))
            with contextlib.suppress(Exception):
                ws.send(json.dumps(reply))

    # --- groups.* ----------------------------------------------------------------------------

    def dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in self.refuse:
            code, message, reason = self.refuse.pop(method)
            raise Refusal(code, message, reason)
        if self.too_old and method.startswith("groups."):
            raise Refusal(-32601, f"unknown method: {method}")
        if method not in self.methods:
            raise Refusal(-32601, f"unknown method: {method}")
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            raise Refusal(-32601, f"unknown method: {method}")
        return handler(params)

    def _tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def _need_worker(self) -> None:
        if not self.driver:
            raise Refusal(4123, "Group Chat worker is unavailable. Restart the Hermes gateway and try again.")

    def _groups_capabilities(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocol_version": 2,
            "driver": self.driver,
            "persistent_process": False,
            "authority_gateway_id": self.install_id,
            "room_link": {"enabled": False, "reason": "gateway_roomlink_secret_unavailable"},
            "participant_tools": {"core": True, "native": False, "peer": False},
            "features": [
                "authority_epoch",
                "replayable_disband",
                "local_membership_revision",
                "rename_revision",
                "responder_policy_v1",
            ],
            "methods": list(self.methods),
            "max_log_limit": 500,
        }

    def _groups_list(self, params: dict[str, Any]) -> dict[str, Any]:
        limit, offset = params.get("limit", 500), params.get("offset", 0)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 500:
            raise Refusal(5110, "limit must be between 1 and 500")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise Refusal(5110, "offset must be a non-negative integer")
        rooms = [r for r in self.rooms.values() if params.get("include_disbanded") is True or not r.get("disbanded_at")]
        rooms.sort(key=lambda r: (-r["updated_at"], r["room_id"]))
        page = rooms[offset : offset + limit]
        return {"rooms": [self._view(r) for r in page], "next_offset": offset + limit if len(page) == limit else None}

    def _view(self, room: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(room)
        out.setdefault("latest_seq", 0)
        return out

    @staticmethod
    def _ident(value: Any, label: str, code: int) -> str:
        if not isinstance(value, str):
            raise Refusal(code, f"{label} must be a string")
        value = value.strip()
        if not 1 <= len(value) <= 128 or not IDENT.match(value):
            raise Refusal(code, f"invalid {label}")
        return value

    def local_profiles(self) -> set[str]:
        folder = self.home / "profiles"
        names = {"default"}
        if folder.is_dir():
            names |= {p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")}
        return names

    def validate_roster(self, members: Any, code: int) -> list[dict[str, Any]]:
        """Roster rules; failures raise the method's *generic* code with no reason (contract 3.11)."""
        if not isinstance(members, list) or not 2 <= len(members) <= 6:
            raise Refusal(code, "members must contain between 2 and 6 entries")
        out, profiles, handles, ids = [], set(), set(), set()
        local = self.local_profiles()
        for i, m in enumerate(members):
            if not isinstance(m, dict):
                raise Refusal(code, f"member {i} must be an object")
            unknown = set(m) - {"member_id", "profile", "handle", "display_name", "target"}
            if unknown:
                raise Refusal(code, f"member {i} has unknown fields: {', '.join(sorted(unknown))}")
            missing = {"member_id", "profile", "handle"} - set(m)
            if missing:
                raise Refusal(code, f"member {i} is missing fields: {', '.join(sorted(missing))}")
            target = m.get("target") or {"kind": "local", "profile": m["profile"]}
            if target.get("kind") == "local" and (target.get("profile") != m["profile"] or m["profile"] not in local):
                raise Refusal(code, f"member {i} profile '{m['profile']}' is not local to this gateway")
            handle = str(m["handle"]).lower()
            if handle in ("all", "everyone") or handle in handles:
                raise Refusal(code, "member handles must be unique and cannot reserve @all or @everyone")
            if m["profile"].lower() in profiles:
                raise Refusal(code, "member profiles must be unique")
            if m["member_id"].lower() in ids:
                raise Refusal(code, "member ids must be unique")
            profiles.add(m["profile"].lower())
            handles.add(handle)
            ids.add(m["member_id"].lower())
            norm = {"member_id": m["member_id"], "profile": m["profile"], "handle": m["handle"], "target": target}
            if m.get("display_name"):
                norm["display_name"] = m["display_name"]
            out.append(norm)
        return out

    def _groups_create(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need_worker()
        members = self.validate_roster(params.get("members"), 5111)
        room_id = self._ident(params.get("room_id"), "room_id", 4110)
        name = params.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 200:
            raise Refusal(4110, "invalid room name")
        name = name.strip()
        existing = self.rooms.get(room_id)
        if room_id in self.retired or (existing and existing.get("disbanded_at")):
            raise Refusal(4110, "room_id belongs to a disbanded room")
        if existing:
            if existing["name"] != name or existing["members"] != members:
                raise Refusal(4110, "room_id already exists with different state")
            return {"room": {**self._view(existing), "idempotent": True}}
        if sum(1 for r in self.rooms.values() if not r.get("disbanded_at")) >= 256:
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
            "idempotent": False,
        }
        self.rooms[room_id] = room
        fresh = copy.deepcopy(room)
        return {"room": fresh}  # a fresh create has no latest_seq

    def _live(self, room_id: str, code: int) -> dict[str, Any]:
        room = self.rooms.get(room_id)
        if room is None or room.get("disbanded_at"):
            raise Refusal(code, "hosted room not found")
        return room

    def _groups_state(self, params: dict[str, Any]) -> dict[str, Any]:
        room_id = self._ident(params.get("room_id"), "room_id", 4114)
        room = self.rooms.get(room_id)
        if room is None or (room.get("disbanded_at") and params.get("include_disbanded") is not True):
            raise Refusal(4114, "hosted room not found")
        return {"room": self._view(room)}

    def _replay(self, room_id: str, event_id: str, payload: Any, code: int, conflict: str) -> dict[str, Any] | None:
        seen = self.events.get((room_id, event_id))
        if seen is None:
            return None
        if seen != payload:
            raise Refusal(code, conflict)
        return {"room": {**self._view(self.rooms[room_id]), "idempotent": True}}

    def _bump(self, room: dict[str, Any]) -> None:
        room["revision"] += 1
        room["updated_at"] = self._tick()

    def _revision(self, params: dict[str, Any], code: int, required: bool) -> int | None:
        value = params.get("expected_revision")
        if value is None and not required:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Refusal(code, "expected_revision must be a positive integer")
        return value

    def _groups_rename(self, params: dict[str, Any]) -> dict[str, Any]:
        room_id = self._ident(params.get("room_id"), "room_id", 4117)
        event_id = self._ident(params.get("event_id"), "event_id", 4117)
        expected = self._revision(params, 4117, required=False)
        name = params.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 200:
            raise Refusal(4117, "invalid room name")
        room = self._live(room_id, 4117)
        payload = {"name": name.strip(), **({"expected_revision": expected} if expected else {})}
        replay = self._replay(room_id, event_id, payload, 4117, "event_id already exists with different immutable content")
        if replay:
            return replay
        if expected is not None and expected != room["revision"]:
            raise Refusal(4117, "room revision changed; reload before renaming")
        self.events[(room_id, event_id)] = payload
        room["name"] = name.strip()
        self._bump(room)
        return {"room": {**self._view(room), "idempotent": False, "event": {"kind": "room.renamed"}}}

    def _groups_members_update(self, params: dict[str, Any]) -> dict[str, Any]:
        room_id = self._ident(params.get("room_id"), "room_id", 4124)
        event_id = self._ident(params.get("event_id"), "event_id", 4124)
        expected = self._revision(params, 4124, required=True)
        self._need_worker()
        members = self.validate_roster(params.get("members"), 5120)
        room = self._live(room_id, 4124)
        payload = {"members": members, "expected_revision": expected}
        replay = self._replay(room_id, event_id, payload, 4124, "event_id already exists with different membership")
        if replay:
            return replay
        if expected != room["revision"]:
            raise Refusal(4124, "room revision changed; reload before editing membership")
        if any(m["target"].get("kind") == "peer" for m in [*room["members"], *members]):
            raise Refusal(4124, "peer membership changes are unsupported", "room_membership_peer_unsupported")
        retired = {m["member_id"] for m in room["retired_members"]}
        old = {m["member_id"]: m for m in room["members"]}
        for m in members:
            if m["member_id"] in retired:
                raise Refusal(4124, "retired member IDs cannot be reused")
            if m["member_id"] in old and old[m["member_id"]] != m:
                raise Refusal(4124, "member identity is immutable; use a new member ID")
        policy = room["responder_policy"]
        new_ids = {m["member_id"] for m in members}
        if policy.get("default_responder") == "leader" and policy.get("leader_member_id") not in new_ids:
            raise Refusal(4124, "Change responder policy before removing its leader")
        self.events[(room_id, event_id)] = payload
        room["retired_members"] += [m for mid, m in old.items() if mid not in new_ids]
        room["members"] = members
        self._bump(room)
        return {"room": {**self._view(room), "idempotent": False, "event": {"kind": "room.members_changed"}}}

    def _groups_policy_update(self, params: dict[str, Any]) -> dict[str, Any]:
        if set(params) != {"room_id", "event_id", "expected_revision", "policy"}:
            raise Refusal(5120, "policy update requires exactly room_id, event_id, expected_revision, policy")
        room_id = self._ident(params.get("room_id"), "room_id", 4124)
        event_id = self._ident(params.get("event_id"), "event_id", 4124)
        expected = self._revision(params, 4124, required=True)
        self._need_worker()
        policy = params["policy"]
        if not isinstance(policy, dict) or set(policy) != set(DEFAULT_POLICY):
            raise Refusal(4124, "responder policy requires exactly the supported policy fields")
        if policy["mode"] not in ("legacy_bounded", "event_driven"):
            raise Refusal(4124, "unsupported responder policy mode")
        if policy["default_responder"] not in ("all", "leader", "mentions_only"):
            raise Refusal(4124, "unsupported default responder")
        for key, high in (("max_turns_per_window", 32), ("window_seconds", 3600)):
            v = policy[key]
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= high:
                raise Refusal(4124, f"invalid responder policy {key}")
        room = self._live(room_id, 4124)
        ids = {m["member_id"] for m in room["members"]}
        if policy["default_responder"] == "leader" and not policy["leader_member_id"]:
            raise Refusal(4124, "leader responder requires leader_member_id")
        if policy["leader_member_id"] is not None and policy["leader_member_id"] not in ids:
            raise Refusal(4124, "leader member is unavailable")
        payload = {"policy": policy, "expected_revision": expected}
        replay = self._replay(room_id, event_id, payload, 4124, "event_id already exists with different policy")
        if replay:
            return replay
        if expected != room["revision"]:
            raise Refusal(4124, "room revision changed; reload before editing policy")
        self.events[(room_id, event_id)] = payload
        room["responder_policy"] = dict(policy)
        self._bump(room)
        return {"room": {**self._view(room), "idempotent": False, "event": {"kind": "room.policy_changed"}}}

    def _groups_disband(self, params: dict[str, Any]) -> dict[str, Any]:
        room_id = self._ident(params.get("room_id"), "room_id", 4113)
        self._need_worker()
        room = self.rooms.get(room_id)
        if room is None:
            raise Refusal(4113, "hosted room not found")
        if room.get("disbanded_at"):
            return {"tombstone": {"room_id": room_id, "disbanded_at": room["disbanded_at"], "idempotent": True}}
        room["disbanded_at"] = self._tick()
        self._bump(room)
        self.retired.add(room_id)
        return {
            "tombstone": {
                "room_id": room_id,
                "disbanded_at": room["disbanded_at"],
                "idempotent": False,
                "event": {"kind": "room.disbanded", "event_id": "system:room-disbanded"},
            }
        }

    # --- test helpers (edits "in the Desktop") ------------------------------------------------

    def edit(self, room_id: str, **changes: Any) -> None:
        with self.lock:
            room = self.rooms[room_id]
            room.update(changes)
            self._bump(room)

    def live(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return {rid: copy.deepcopy(r) for rid, r in self.rooms.items() if not r.get("disbanded_at")}
