"""The Hermes gateway client: discovery (never starting one), tickets, WebSocket JSON-RPC.

The only module that talks to a gateway (and the only one importing `websockets`). The facts
are in docs/hermes/gateway.md (#discovery, #control-socket, #tickets, #websocket, #errors):

- Discovery reads `<home>/gateway.sock` (or the `gateway.sock.path` pointer), applies the
  contract's safety checks and fails closed, asks `identify`, validates the runtime descriptor,
  and mints a single-use `interactive` ticket with `session-ticket`. It never runs
  `hermes gateway ensure` and never starts anything: no socket means no gateway.
- An explicit `--gateway URL` is used as given; its credential comes from a secret reference
  (`--gateway-token-env NAME`) and travels in the ticket slot of the WebSocket subprotocol header.
- Every failure is mapped once, in `classify`, onto three outcomes: transient (nothing happened,
  try again later), permanent (the gateway refused; the same request fails the same way) and
  unknown (a write was sent and its reply was lost). An unknown outcome is never retried here:
  the caller resolves it by reading state.

Credentials (tickets, tokens) never appear in an error message, a log line or a plan.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import ipaddress
import itertools
import json
import os
import socket
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from controller.errors import (
    GatewayAuthError,
    GatewayError,
    GatewayIncompatible,
    GatewayOutcomeUnknown,
    GatewayRefused,
    GatewayUnavailable,
)
from controller.redact import redact_url, without

SUBPROTOCOL = "hermes-gateway-v1"
TICKET_PREFIX = "hermes-gateway-ticket."
READ_METHODS = frozenset({"groups.capabilities", "groups.list", "groups.state"})
SUPERVISORS = frozenset({"none", "systemd", "launchd", "windows", "external"})
CONTROL_REQUEST_MAX = 64 * 1024
CONTROL_RESPONSE_MAX = 512 * 1024
POINTER_MAX = 4096
MAX_FRAME = 8 * 1024 * 1024
DEFAULT_TIMEOUT = 10.0


# --- errors: one mapping (the classes are in controller.errors) -----------------------------------


def classify(exc: BaseException, *, method: str = "", sent: bool = False, secrets: tuple[str, ...] = ()) -> GatewayError:
    """The one place where transport failures become typed gateway errors."""
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

    if isinstance(exc, GatewayError):
        return exc
    text = without(str(exc) or type(exc).__name__, secrets)
    what = f"{method}: " if method else ""
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        if status in (401, 403):
            return GatewayAuthError(
                f"the gateway refused the credential (HTTP {status})",
                code=status,
                hint="mint a fresh ticket, or check the token named by --gateway-token-env",
            )
        if status >= 500:
            return GatewayUnavailable(f"the gateway failed the connection (HTTP {status})", reason="http_5xx")
        return GatewayIncompatible(
            f"the gateway refused the WebSocket upgrade (HTTP {status}); is this a Hermes gateway with /api/ws?", code=status
        )
    if isinstance(exc, InvalidURI):
        return GatewayIncompatible(f"invalid gateway URL: {text}")
    if isinstance(exc, InvalidHandshake):
        return GatewayUnavailable(f"WebSocket handshake failed: {text}", reason="handshake")
    if sent and method not in READ_METHODS:
        # The request left this machine; its reply did not come back. It may have been applied.
        return GatewayOutcomeUnknown(
            f"{what}no reply from the gateway ({text}); the change may or may not have been applied", reason="reply_lost"
        )
    if isinstance(exc, ConnectionClosed):
        return GatewayUnavailable(f"{what}the gateway closed the connection ({text})", reason="connection_closed")
    if isinstance(exc, TimeoutError | socket.timeout):
        return GatewayUnavailable(f"{what}the gateway did not answer in time", reason="timeout")
    if isinstance(exc, OSError):
        return GatewayUnavailable(f"{what}cannot reach the gateway: {text}", reason="unreachable")
    return GatewayUnavailable(f"{what}{text}", reason="transport")


def refusal(method: str, error: Any) -> GatewayRefused:
    """A JSON-RPC error object as a typed refusal (contract 2.1, 3.1)."""
    if not isinstance(error, dict):
        return GatewayRefused(f"{method}: malformed error reply", method=method)
    code = v if isinstance(v := error.get("code"), int) else 0
    message = str(error.get("message") or "refused")
    data = v if isinstance(v := error.get("data"), dict) else {}
    reason = v if isinstance(v := data.get("reason"), str) else None
    cls = GatewayIncompatible if code == -32601 else GatewayRefused
    return cls(f"{method} refused ({code}{', ' + reason if reason else ''}): {message}", code=code, reason=reason, method=method)


# --- discovery over the control socket ------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A live gateway found through a home's control socket (no credentials in here)."""

    api_origin: str
    instance_id: str
    profile_id: str
    control_path: str
    state: str = "ready"
    home: str = ""  # the home it serves, as given (for the ticket refusal's hint)


def hash16(home: Path) -> str:
    return hashlib.sha256(os.path.normcase(str(Path(home).expanduser().resolve())).encode()).hexdigest()[:16]


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0


def _unsafe(reason: str, message: str) -> GatewayUnavailable:
    return GatewayUnavailable(
        f"gateway discovery refused: {message} ({reason})",
        reason=reason,
        hint="fix the ownership/permissions, or restart the gateway on this machine",
    )


def control_socket_path(home: Path) -> Path | None:
    """The control socket of `home`, after the contract's safety checks; None when there is none."""
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o002:
        raise _unsafe("unsafe_control_path", f"{home} is not owned by this user or is world-writable")
    sock = home / "gateway.sock"
    pointer = home / "gateway.sock.path"
    try:
        sst = os.lstat(sock)
    except FileNotFoundError:
        sst = None
    if sst is not None:
        if not stat.S_ISSOCK(sst.st_mode):
            raise _unsafe("unsafe_control_path", f"{sock} is not a socket")
        if not _private(sst):
            raise _unsafe("unsafe_control_permissions", f"{sock} must be owned by this user, mode 0600")
        return sock
    if not os.path.lexists(pointer):
        return None
    return _follow_pointer(home, pointer)


def _follow_pointer(home: Path, pointer: Path) -> Path:
    try:
        fd = os.open(pointer, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise _unsafe("unsafe_control_pointer", f"cannot open {pointer} safely: {exc.strerror}") from None
    try:
        pst = os.fstat(fd)
        if not stat.S_ISREG(pst.st_mode) or not _private(pst):
            raise _unsafe("unsafe_control_pointer", f"{pointer} must be a regular file of this user, mode 0600")
        if pst.st_size > POINTER_MAX:
            raise _unsafe("invalid_control_pointer", f"{pointer} is too large")
        raw = os.read(fd, POINTER_MAX + 1)
    finally:
        os.close(fd)
    target = Path(raw.decode("utf-8", "replace").strip())
    if not target.is_absolute() or target.name != "control.sock" or target.parent.name != f"hermes-gw-{hash16(home)}":
        raise _unsafe("invalid_control_pointer", f"{pointer} does not name <tmp>/hermes-gw-<hash>/control.sock")
    try:
        dst, sst = os.lstat(target.parent), os.lstat(target)
    except FileNotFoundError:
        raise GatewayUnavailable("no gateway is running for this home (stale socket pointer)", reason="absent") from None
    if not stat.S_ISDIR(dst.st_mode) or not _private(dst):
        raise _unsafe("unsafe_control_path", f"{target.parent} must be a private (0700) folder of this user")
    if not stat.S_ISSOCK(sst.st_mode) or not _private(sst):
        raise _unsafe("unsafe_control_permissions", f"{target} must be a socket of this user, mode 0600")
    return target


def control_request(
    path: Path, verb: str, params: dict[str, Any] | None = None, *, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """One request per connection: a JSON line out, a JSON line back (contract 1.3)."""
    request: dict[str, Any] = {"protocol": 1, "id": 1, "verb": verb}
    if params is not None:
        request["params"] = params
    line = (json.dumps(request, separators=(",", ":")) + "\n").encode()
    if len(line) > CONTROL_REQUEST_MAX:
        raise GatewayRefused(f"control request {verb} is too large")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise GatewayUnavailable("no gateway is running for this home (control socket refused)", reason="absent") from None
        except PermissionError:
            raise GatewayUnavailable("the gateway's control socket refused this user", reason="authorization") from None
        _check_peer(sock)
        sock.sendall(line)
        data = b""
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > CONTROL_RESPONSE_MAX:
                raise GatewayUnavailable("the gateway's control answer is too large", reason="oversized_control_response")
    except TimeoutError:
        raise GatewayUnavailable("the gateway's control socket did not answer in time", reason="control_timeout") from None
    except OSError as exc:
        raise classify(exc, method=f"control {verb}") from None
    finally:
        sock.close()
    if b"\n" not in data:
        raise GatewayUnavailable("the gateway's control answer was cut short", reason="incomplete_control_response")
    try:
        reply = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        raise GatewayUnavailable("the gateway's control answer is not JSON", reason="invalid_control_response") from None
    if not isinstance(reply, dict) or reply.get("protocol") != 1 or reply.get("id") != 1:
        raise GatewayUnavailable("the gateway's control answer has the wrong shape", reason="invalid_control_response")
    if reply.get("ok") is not True:
        raise GatewayRefused(f"control {verb} refused: {reply.get('error') or 'no reason given'}", method=f"control {verb}")
    result = reply.get("result")
    if not isinstance(result, dict):
        raise GatewayUnavailable("the gateway's control answer has no result", reason="invalid_control_response")
    return result


def _check_peer(sock: socket.socket) -> None:
    """The process behind the socket must run as this user (SO_PEERCRED where the OS has it)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return  # the socket file's owner and 0600 mode were checked before connecting
    raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    if uid != os.getuid():
        raise _unsafe("unsafe_control_peer", "the control socket is served by another user")


def discover(home: Path, *, timeout: float = DEFAULT_TIMEOUT) -> Endpoint:
    """The ready gateway serving `home`, or GatewayUnavailable saying why there is none."""
    home = Path(home).expanduser()
    path = control_socket_path(home)
    if path is None:
        lock = home / "gateway.lock"
        held = lock_held(lock) if os.path.lexists(lock) else False
        if held:
            raise GatewayUnavailable(
                "the gateway for this home is starting: it holds gateway.lock but has not opened its control socket yet",
                reason="starting",
                hint="run again in a moment",
            )
        left = " (its gateway.lock was left behind by a gateway that stopped)" if os.path.lexists(lock) else ""
        if held is None:
            left = " (gateway.lock exists: a gateway is starting, or one stopped without cleaning up)"
        raise GatewayUnavailable(
            "no gateway is running for this home" + left,
            reason="absent",
            hint=f"start it on this machine with `hermes gateway run` (HERMES_HOME={home}), or pass --gateway URL",
        )
    endpoint = validate_descriptor(control_request(path, "identify", timeout=timeout), home, str(path))
    return dataclasses.replace(endpoint, home=str(home))


def lock_held(path: Path) -> bool | None:
    """Whether a live process holds `gateway.lock` (Hermes holds it with flock while it runs).

    None when it cannot be told (no flock on this OS, an unreadable file). The probe takes a shared
    lock for an instant, as Hermes' own `is_gateway_runtime_lock_active` takes an exclusive one
    (docs/hermes/gateway.md#discovery).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the gateway uses a named mutex there
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def validate_descriptor(d: dict[str, Any], home: Path, control_path: str) -> Endpoint:
    """Main's `discover_gateway_endpoint` rules (contract 1.3, `identify`)."""

    def bad(message: str, reason: str = "incompatible") -> GatewayUnavailable:
        return GatewayUnavailable(
            f"the gateway for this home is not usable: {message}",
            reason=reason,
            hint="update Hermes and restart the gateway on this machine",
        )

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if not (is_int(d.get("runtime_protocol")) and d["runtime_protocol"] == 1):
        raise bad("runtime_protocol is not 1")
    if "session-authority-v1" not in (d.get("capabilities") or []):
        raise bad("it lacks the session-authority-v1 capability")
    if not (is_int(d.get("authority_epoch")) and d["authority_epoch"] > 0):
        raise bad("authority_epoch is invalid", "invalid_control_response")
    instance = d.get("instance_id")
    if not isinstance(instance, str) or not instance:
        raise bad("instance_id is missing", "invalid_control_response")
    if d.get("supervisor") not in SUPERVISORS:
        raise bad("unknown supervisor", "invalid_control_response")
    origin = d.get("api_origin")
    if not isinstance(origin, str) or not loopback_origin(origin):
        raise bad("api_origin is not a loopback http(s)://<ip>:<port> origin", "invalid_control_response")
    want = os.path.normcase(str(home.resolve()))
    matches = [
        p
        for p in (d.get("served_profiles") or [])
        if isinstance(p, dict) and isinstance(p.get("home"), str) and os.path.normcase(str(Path(p["home"]).resolve())) == want
    ]
    if len(matches) != 1 or not isinstance(matches[0].get("profile_id"), str) or not matches[0]["profile_id"]:
        raise GatewayUnavailable("the gateway on this socket does not serve this home", reason="profile_mismatch")
    state = d.get("state")
    if state != "ready":
        if state in ("starting", "draining", "conflict"):
            raise GatewayUnavailable(
                f"the gateway for this home is {state}", reason=str(state), hint="wait for it to be ready and run again"
            )
        raise GatewayUnavailable(f"the gateway for this home is not usable (state {state!r})", reason="inaccessible")
    return Endpoint(origin, instance, matches[0]["profile_id"], control_path, state)


def loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
        port = parts.port
        host = ipaddress.ip_address(parts.hostname or "")
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and port is not None
        and host.is_loopback
        and not parts.username
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
    )


def ticket_hint(home: str) -> str:
    """What to do when the gateway refuses a ticket, from what this machine can see of the home.

    The gateway issues tickets only to a peer it can authenticate, for a home whose path has no
    symlink and whose mode is private (docs/hermes/gateway.md#tickets).
    """
    path = Path(home) if home else None
    try:
        st = path.lstat() if path else None
    except OSError:
        st = None
    if path is not None and st is not None:
        if stat.S_IMODE(st.st_mode) & 0o077:
            return f"the gateway issues tickets only for a private home: run `chmod 700 {path}`"
        if path.absolute() != path.resolve():
            return f"the gateway issues no ticket for a home reached through a symlink: use {path.resolve()} as the home"
    return "run again; if it persists, restart the gateway on this machine (`hermes gateway restart`)"


def mint_ticket(endpoint: Endpoint, purpose: str = "interactive", *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """A single-use ticket from the control socket; the echo fields must match (contract 1.3).

    A refusal keeps the gateway's own reason and adds the fix this machine can see.
    """
    params = {"profile_id": endpoint.profile_id, "instance_id": endpoint.instance_id, "purpose": purpose}
    try:
        grant = control_request(Path(endpoint.control_path), "session-ticket", params, timeout=timeout)
    except GatewayRefused as exc:
        raise GatewayUnavailable(
            f"the gateway would not issue a ticket ({exc.message.removeprefix('control session-ticket refused: ')})",
            reason="ticket_refused",
            hint=ticket_hint(endpoint.home),
        ) from exc
    ticket = grant.get("ticket")
    if (
        not isinstance(ticket, str)
        or not ticket
        or grant.get("profile_id") != endpoint.profile_id
        or grant.get("instance_id") != endpoint.instance_id
        or grant.get("runtime_protocol") != 1
    ):
        raise GatewayUnavailable(
            "the gateway issued a ticket for another instance or profile",
            reason="ticket_unavailable",
            hint="run again (the gateway may have restarted)",
        )
    return ticket


# --- the WebSocket JSON-RPC session ---------------------------------------------------------------


class Link:
    """The one connection a run may make with a credential that cannot be renewed.

    Tickets are single-use (docs/hermes/gateway.md#tickets): with `--gateway-token-env` the run has
    exactly one credential, so every session of the run (observe, plan again under the lock, apply)
    shares the one connection it opened. Once that connection is gone, it cannot be replaced.
    """

    def __init__(self) -> None:
        self.ws: Any = None
        self.used = False
        self.secrets: tuple[str, ...] = ()

    def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()
            self.ws = None


@dataclass(frozen=True)
class GatewayOptions:
    """How to reach the gateway: CLI --gateway / --gateway-token-env / --gateway-timeout.

    One value per run: its `link` carries the run's one connection when the credential is single-use.
    """

    url: str | None = None
    token_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    link: Link = field(default_factory=Link, compare=False, repr=False)

    def release(self) -> None:
        """The run is over: close the connection it kept (if any)."""
        self.link.close()


def ws_url(origin_or_url: str) -> str:
    parts = urlsplit(origin_or_url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise GatewayIncompatible(
            f"gateway URL {redact_url(origin_or_url)!r} must be http(s):// or ws(s)://host:port",
            hint="pass e.g. --gateway http://127.0.0.1:9119",
        )
    path = parts.path if parts.path not in ("", "/") else "/api/ws"
    return f"{scheme}://{parts.netloc}{path}" + (f"?{parts.query}" if parts.query else "")


SPENT_HINT = (
    "tickets are single-use and expire 30 s after they are minted: mint a fresh one on that machine "
    "(`hermes gateway ticket`) right before the run, or run hermes-fleet on that machine"
)


@dataclass
class Session:
    """One WebSocket connection; `call` sends one request and waits for the reply with its id.

    With a `link` (a single-use credential), the connection is the run's shared one: closing the
    session keeps it for the run's next session; a broken connection cannot be replaced.
    """

    url: str
    credential: Any  # callable -> str (a fresh ticket or the token); never stored as a string here
    timeout: float = DEFAULT_TIMEOUT
    writes: bool = False
    label: str = ""
    link: Link | None = None
    sent: list[str] = field(default_factory=list)  # each write method sent on this session, in order
    _ws: Any = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _secrets: tuple[str, ...] = ()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._ws is not None and self.link is not None and self._ws is self.link.ws:
            self._ws = None  # the run's shared connection stays open for the next session
            return
        self._drop()

    def _drop(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close()
            if self.link is not None and self._ws is self.link.ws:
                self.link.ws = None
            self._ws = None

    def _connect(self) -> None:
        from websockets.sync.client import connect
        from websockets.typing import Subprotocol

        if self.link is not None:
            if self.link.ws is not None:
                self._ws, self._secrets = self.link.ws, self.link.secrets
                return
            if self.link.used:
                raise GatewayAuthError(
                    f"the connection to {self.label or self.url} was lost, and the credential in --gateway-token-env "
                    "was already used by this run (a ticket opens one connection)",
                    hint=SPENT_HINT,
                )
        for attempt in (1, 2):
            secret = self.credential()
            self._secrets = (*self._secrets, secret)
            self._follow()
            try:
                self._ws = connect(
                    self.url,
                    subprotocols=[Subprotocol(SUBPROTOCOL), Subprotocol(TICKET_PREFIX + secret)],
                    open_timeout=self.timeout,
                    close_timeout=min(self.timeout, 2.0),
                    max_size=MAX_FRAME,
                    proxy=None,
                    compression=None,
                )
                self._ws.__enter__()  # the connection's lifetime is ours (close()); no legacy warning
            except Exception as exc:
                if self.link is not None:
                    self.link.used = True
                error = classify(exc, secrets=self._secrets)
                # A refused ticket: mint a new one and try once more (contract 2.1).
                if isinstance(error, GatewayAuthError) and attempt == 1 and getattr(self.credential, "fresh", False):
                    continue
                # Nothing listens where the gateway was: it may have restarted elsewhere; find it again.
                if error.reason == "unreachable" and attempt == 1 and self._rediscovered():
                    continue
                if isinstance(error, GatewayAuthError) and not getattr(self.credential, "fresh", False):
                    error.hint = SPENT_HINT
                raise error from None
            if self._ws.subprotocol != SUBPROTOCOL:
                self._drop()
                raise GatewayIncompatible(
                    f"the gateway at {self.label or self.url} did not select the {SUBPROTOCOL} subprotocol",
                    hint="update Hermes on that machine",
                )
            if self.link is not None:
                self.link.ws, self.link.used, self.link.secrets = self._ws, True, self._secrets
            return

    def _follow(self) -> None:
        """A discovered gateway is reached where it is now: after a restart its port may differ."""
        endpoint = getattr(self.credential, "endpoint", None) if getattr(self.credential, "follow", False) else None
        if endpoint is not None and endpoint.api_origin != self.label:
            self.url, self.label = ws_url(endpoint.api_origin), endpoint.api_origin

    def _rediscovered(self) -> bool:
        again = getattr(self.credential, "rediscover", None) if getattr(self.credential, "follow", False) else None
        return bool(again is not None and again())

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if method not in READ_METHODS and not self.writes:
            raise GatewayRefused(f"{method} is a write and this session is read-only (plan never writes)", method=method)
        if self._ws is None:
            self._connect()
        rid = next(self._ids)
        frame = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        sent = False
        try:
            self._ws.send(frame)
            sent = True
            if method not in READ_METHODS:
                self.sent.append(method)
            while True:
                raw = self._ws.recv(timeout=self.timeout)
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(message, dict) or message.get("id") != rid:
                    continue  # events (no id) and replies to someone else
                if "error" in message:
                    raise refusal(method, message["error"])
                result = message.get("result")
                if not isinstance(result, dict):
                    raise GatewayRefused(f"{method}: reply without a result object", method=method)
                return result
        except GatewayError:
            raise
        except Exception as exc:
            self._drop()  # a half-read connection is never reused
            raise classify(exc, method=method, sent=sent, secrets=self._secrets) from None


class _Fresh:
    """Mints a new interactive ticket per connection (discovery mode).

    A refusal from a gateway that restarted in between (another instance id) is retried once with
    the new instance; any other refusal keeps the gateway's reason (mint_ticket). With `follow`
    (the URL came from discovery, not from --gateway), the session connects to the api_origin of
    the endpoint found last: a restarted gateway may listen on another port.
    """

    fresh = True

    def __init__(self, endpoint: Endpoint, timeout: float, *, follow: bool = False) -> None:
        self.endpoint, self.timeout, self.follow = endpoint, timeout, follow

    def __call__(self) -> str:
        try:
            return mint_ticket(self.endpoint, "interactive", timeout=self.timeout)
        except GatewayUnavailable:
            if not self.rediscover():
                raise
            return mint_ticket(self.endpoint, "interactive", timeout=self.timeout)

    def rediscover(self) -> bool:
        """Ask the control socket again; True when another gateway instance answers now."""
        if not self.endpoint.home:
            return False
        again = discover(Path(self.endpoint.home), timeout=self.timeout)
        if (again.instance_id, again.api_origin) == (self.endpoint.instance_id, self.endpoint.api_origin):
            return False
        self.endpoint = again
        return True


class _Token:
    fresh = False

    def __init__(self, env: str) -> None:
        self.env = env

    def __call__(self) -> str:
        value = os.environ.get(self.env, "")
        if not value.strip():
            raise GatewayAuthError(
                f"--gateway-token-env {self.env}: that environment variable is empty or unset",
                hint=f"export {self.env}=<a ticket minted on that machine (`hermes gateway ticket`)>",
            )
        return value.strip()


def open_session(home: Path, options: GatewayOptions, *, writes: bool) -> Session:
    """A (lazily connecting) session to the explicit --gateway URL, or to the home's own gateway.

    Discovery mints a fresh ticket for each connection; a `--gateway-token-env` credential opens the
    run's one shared connection (`GatewayOptions.link`).
    """
    timeout = options.timeout
    if options.url:
        url = ws_url(options.url)
        if options.token_env:
            return Session(url, _Token(options.token_env), timeout, writes, label=redact_url(url), link=options.link)
        return Session(url, _Fresh(discover(home, timeout=timeout), timeout), timeout, writes, label=redact_url(url))
    endpoint = discover(home, timeout=timeout)
    url = ws_url(endpoint.api_origin)
    return Session(url, _Fresh(endpoint, timeout, follow=True), timeout, writes, label=endpoint.api_origin)
