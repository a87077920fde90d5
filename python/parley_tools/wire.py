"""A Parley wire protocol peer written from docs/protocol.md alone (not from the Swift sources).

Section numbers in comments refer to docs/protocol.md. Everything is little-endian (§1).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import ssl
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass, field

# §2 framing
START = 0xCF
ORIGINAL_START = 0xCE
PREFIX = 5

# §3 frame kinds
HELLO, AUTH, SEALED = 0x01, 0x02, 0x03
MESSAGE, ERROR_REPLY = 0x10, 0x11
PING, PONG = 0x20, 0x21
CLOSE = 0x30

EXPECTS_REPLY = 0x01

# §8 close codes and §7 error-reply codes
GOING_AWAY = 0
INCOMPATIBLE_VERSION = 1
HANDSHAKE_TIMEOUT = 2
MALFORMED_FRAME = 3
FRAME_TOO_LARGE = 4
UNKNOWN_TYPE = 5
UNDECODABLE_PAYLOAD = 6
NO_RESPONDER = 7
HANDLER_FAILED = 8
DUPLICATE_CONNECTION = 9
CONNECTED_TO_SELF = 10
AUTHENTICATION_FAILED = 11
HEARTBEAT_TIMEOUT = 12
PROTOCOL_VIOLATION = 13
AUTHENTICATION_REQUIRED = 14
PEER_ID_IN_USE = 15
TOO_MANY_CONNECTIONS = 20
IDLE_TIMEOUT = 21
RATE_LIMITED = 22
MEMORY_BUDGET = 23
STALLED_FRAME = 24

# §7 parleyd's codes for its local clients (the control socket), from 100 up
NO_MATCHING_PEER = 100
AMBIGUOUS_TARGET = 101
NOT_ROUTED = 102
FORWARD_FAILED = 103
INVALID_CONFIGURATION = 104
NO_SUCH_SESSION = 105
NO_SUCH_ENTRY = 106
INVALID_REQUEST = 107
INVALID_DRAWER_VALUE = 108
DRAWER_ITEM_IS_ACTION = 109
DRAWER_ITEM_IS_NOT_ACTION = 110
APP_FAILED = 111
STORAGE_FAILED = 112
FIRST_OF_SESSION = 113
SESSION_APP_NOT_CONNECTED = 114

CODE_NAMES = {
    0: "going-away", 1: "incompatible-version", 2: "handshake-timeout", 3: "malformed-frame",
    4: "frame-too-large", 5: "unknown-type", 6: "undecodable-payload", 7: "no-responder",
    8: "handler-failed", 9: "duplicate-connection", 10: "connected-to-self", 11: "authentication-failed",
    12: "heartbeat-timeout", 13: "protocol-violation", 14: "authentication-required", 15: "peer-id-in-use",
    16: "device-not-trusted", 17: "device-authentication-required", 18: "pairing-requested",
    20: "too-many-connections", 21: "idle-timeout", 22: "rate-limited", 23: "memory-budget", 24: "stalled-frame",
    100: "no-matching-peer", 101: "ambiguous-target", 102: "not-routed", 103: "forward-failed",
    104: "invalid-configuration", 105: "no-such-session", 106: "no-such-entry", 107: "invalid-request",
    108: "invalid-drawer-value", 109: "drawer-item-is-action", 110: "drawer-item-is-not-action", 111: "app-failed",
    112: "storage-failed", 113: "first-of-session", 114: "session-app-not-connected", 115: "no-such-trace",
    116: "ambiguous-trace", 117: "no-such-device", 118: "ambiguous-device",
}

# The codes by name, for readers of §8's table.
CODE_IDS = {name: code for code, name in CODE_NAMES.items()}

SCHEME = "psk-x25519-chachapoly-v1"

DEFAULT_TIMEOUT = 5.0


class Closed(Exception):
    """The other side closed the TCP connection (end of stream or reset)."""


class NoFrame(Exception):
    """Nothing (or not a whole frame) arrived before the deadline."""


# ---------------------------------------------------------------------------------------------- frame bodies

def frame(body: bytes, start: int = START) -> bytes:
    """§2: start byte, UInt32 LE body length, body."""
    return bytes([start]) + struct.pack("<I", len(body)) + body


def original_frame(body: bytes, length: int | None = None) -> bytes:
    """§5: 0xCE, Int32 LE length, JSON body."""
    return bytes([ORIGINAL_START]) + struct.pack("<i", len(body) if length is None else length) + body


def hello_body(json_bytes: bytes, minimum: int = 1, maximum: int = 1) -> bytes:
    return bytes([HELLO]) + struct.pack("<HH", minimum, maximum) + json_bytes


def message_body(type_name: str | bytes, payload: bytes = b"", *, id: int, in_reply_to: int = 0,
                 flags: int = 0, name_length: int | None = None) -> bytes:
    name = type_name.encode() if isinstance(type_name, str) else type_name
    length = len(name) if name_length is None else name_length
    return struct.pack("<BBQQH", MESSAGE, flags, id, in_reply_to, length) + name + payload


def error_reply_body(in_reply_to: int, code: int, text: str = "") -> bytes:
    return struct.pack("<BQH", ERROR_REPLY, in_reply_to, code) + text.encode()


def ping_body(nonce: int) -> bytes:
    return struct.pack("<BQ", PING, nonce)


def pong_body(nonce: int) -> bytes:
    return struct.pack("<BQ", PONG, nonce)


def close_body(code: int, text: str = "") -> bytes:
    return struct.pack("<BH", CLOSE, code) + text.encode()


def auth_body(proof: bytes) -> bytes:
    return bytes([AUTH]) + proof


@dataclass
class Frame:
    """A decoded Parley frame. `raw` is the whole frame as received (prefix included); for a frame that
    arrived sealed, `raw` is the inner frame rebuilt with its own prefix and `sealed` is True."""
    kind: int
    body: bytes
    raw: bytes
    sealed: bool = False
    # kind-specific fields
    minimum: int | None = None
    maximum: int | None = None
    json: dict | None = None
    flags: int | None = None
    id: int | None = None
    in_reply_to: int | None = None
    type_name: str | None = None
    payload: bytes | None = None
    code: int | None = None
    text: str | None = None
    nonce: int | None = None
    proof: bytes | None = None

    @property
    def code_name(self) -> str:
        return CODE_NAMES.get(self.code, str(self.code))

    def __repr__(self) -> str:
        parts = [f"kind={self.kind:#04x}"]
        for name in ("minimum", "maximum", "json", "flags", "id", "in_reply_to", "type_name", "code", "text", "nonce"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value!r}")
        if self.kind == CLOSE or self.kind == ERROR_REPLY:
            parts.append(f"({self.code_name})")
        if self.payload is not None:
            parts.append(f"payload={self.payload[:80]!r}")
        return "Frame(" + ", ".join(parts) + ")"


def parse_body(body: bytes, raw: bytes, sealed: bool = False) -> Frame:
    """Decodes a Parley frame body by the layouts of §3."""
    if not body:
        raise ValueError("empty body (§2: malformed)")
    f = Frame(kind=body[0], body=body, raw=raw, sealed=sealed)
    if f.kind == HELLO:
        f.minimum, f.maximum = struct.unpack_from("<HH", body, 1)
        f.json = json.loads(body[5:])
    elif f.kind == MESSAGE:
        f.flags, f.id, f.in_reply_to, length = struct.unpack_from("<BQQH", body, 1)
        f.type_name = body[20:20 + length].decode()
        f.payload = body[20 + length:]
    elif f.kind == ERROR_REPLY:
        f.in_reply_to, f.code = struct.unpack_from("<QH", body, 1)
        f.text = body[11:].decode("utf-8", "replace")
    elif f.kind in (PING, PONG):
        assert len(body) == 9, f"§3: ping/pong body is exactly 9 bytes, got {len(body)}"
        (f.nonce,) = struct.unpack_from("<Q", body, 1)
    elif f.kind == CLOSE:
        (f.code,) = struct.unpack_from("<H", body, 1)
        f.text = body[3:].decode("utf-8", "replace")
    elif f.kind == AUTH:
        f.proof = body[1:]
    return f


# ---------------------------------------------------------------------------------------------- §4.1 crypto

def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 HKDF-Expand with SHA-256."""
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def read_secret_file(path: str) -> bytes:
    """§4.1: one line of 64 hex digits, or standard base64 of 32 bytes, and a newline."""
    text = open(path).read().strip()
    if len(text) == 64:
        return bytes.fromhex(text)
    return base64.b64decode(text, validate=True)


class Offer:
    """Our side of an authenticated handshake: the nonce and the ephemeral X25519 key of one connection."""

    def __init__(self, nonce: bytes | None = None, private_key: bytes | None = None):
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        self.nonce = nonce if nonce is not None else os.urandom(32)
        self.private = (X25519PrivateKey.from_private_bytes(private_key) if private_key is not None
                        else X25519PrivateKey.generate())
        self.public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def json(self) -> dict:
        return {"scheme": SCHEME, "nonce": base64.b64encode(self.nonce).decode(),
                "key": base64.b64encode(self.public).decode()}


@dataclass
class KeySchedule:
    h: bytes
    proof: dict
    key: dict
    iv: dict


def key_schedule(secret: bytes, H_d: bytes, H_a: bytes, n_d: bytes, n_a: bytes, e_d: bytes, e_a: bytes,
                 own_private, peer_public: bytes) -> KeySchedule:
    """The formulas of §4.1, literally."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
    h = hashlib.sha256(b"parley psk-x25519-chachapoly-v1" + H_d + H_a + n_d + n_a + e_d + e_a).digest()
    proof = {r: hmac.new(secret, b"parley proof " + r.encode() + h, hashlib.sha256).digest()
             for r in ("dialer", "acceptor")}
    dh = own_private.exchange(X25519PublicKey.from_public_bytes(peer_public))
    prk = hmac.new(secret, dh, hashlib.sha256).digest()  # HKDF-Extract(salt K, input dh)
    key = {r: hkdf_expand(prk, b"parley key sent by " + r.encode() + h, 32) for r in ("dialer", "acceptor")}
    iv = {r: hkdf_expand(prk, b"parley iv sent by " + r.encode() + h, 12) for r in ("dialer", "acceptor")}
    return KeySchedule(h=h, proof=proof, key=key, iv=iv)


class Sealer:
    """One direction of sealed frames (§3 sealed, §4.1): ChaCha20-Poly1305, implicit counter nonce."""

    def __init__(self, key: bytes, iv: bytes):
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
        self.aead = ChaCha20Poly1305(key)
        self.iv = iv
        self.counter = 0

    def nonce(self, counter: int) -> bytes:
        return bytes(a ^ b for a, b in zip(self.iv, bytes(4) + struct.pack(">Q", counter)))

    def seal(self, inner_body: bytes) -> bytes:
        length = 1 + len(inner_body) + 16
        header = bytes([START]) + struct.pack("<I", length) + bytes([SEALED])
        sealed = header + self.aead.encrypt(self.nonce(self.counter), inner_body, header)
        self.counter += 1
        return sealed

    def open(self, raw: bytes) -> bytes:
        header = raw[:6]
        inner = self.aead.decrypt(self.nonce(self.counter), raw[6:], header)
        self.counter += 1
        return inner


# ---------------------------------------------------------------------------------------------- connection

class Connection:
    """A raw byte-level connection with a frame reader that enforces read deadlines."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""
        self.sealer: Sealer | None = None   # ours, once the handshake switched to sealed frames
        self.opener: Sealer | None = None   # the peer's
        self.peer_hello: Frame | None = None
        self.sent_hello: bytes | None = None
        self.next_id = 1

    # -- writing
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, body: bytes) -> None:
        """Sends a frame with this body; sealed once the connection is authenticated."""
        if self.sealer is not None:
            self.sock.sendall(self.sealer.seal(body))
        else:
            self.sock.sendall(frame(body))

    def new_id(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value

    def send_message(self, type_name: str, payload: bytes = b"", *, request: bool = False,
                     in_reply_to: int = 0) -> int:
        mid = self.new_id()
        self.send(message_body(type_name, payload, id=mid, in_reply_to=in_reply_to,
                               flags=EXPECTS_REPLY if request else 0))
        return mid

    def reply(self, request: Frame, type_name: str, payload: bytes = b"") -> int:
        return self.send_message(type_name, payload, in_reply_to=request.id)

    def assert_alive(self, timeout: float = DEFAULT_TIMEOUT) -> Frame:
        """Proves the connection still works end to end: a request for a type nobody handles must come back as
        an error-reply unknown-type (§7). (A ping would do only for a peer that lists "heartbeat", §6.)"""
        rid = self.send_message("conf.NobodyHandlesThis", b"{}", request=True)
        answer = self.recv_answer(rid, timeout)
        assert answer.kind == ERROR_REPLY and answer.code == UNKNOWN_TYPE, answer
        return answer

    def send_close(self, code: int = GOING_AWAY, text: str = "") -> None:
        self.send(close_body(code, text))

    def half_close(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- reading
    def _fill(self, count: int, deadline: float) -> None:
        while len(self.buffer) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise NoFrame(f"no complete frame before the deadline ({len(self.buffer)} bytes buffered)")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(max(65536, count - len(self.buffer)))
            except socket.timeout:
                continue
            except ConnectionResetError as error:
                raise Closed(f"connection reset ({len(self.buffer)} bytes buffered)") from error
            if not chunk:
                raise Closed(f"end of stream ({len(self.buffer)} bytes buffered)")
            self.buffer += chunk

    def recv_bytes(self, count: int, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        self._fill(count, time.monotonic() + timeout)
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def recv_raw_frame(self, timeout: float = DEFAULT_TIMEOUT, start: int = START) -> bytes:
        """One whole frame, prefix included, checking the start byte (§13.2)."""
        deadline = time.monotonic() + timeout
        self._fill(PREFIX, deadline)
        if self.buffer[0] != start:
            raise AssertionError(f"unexpected start byte {self.buffer[0]:#04x}, expected {start:#04x}")
        (length,) = struct.unpack_from("<I", self.buffer, 1)
        self._fill(PREFIX + length, deadline)
        raw, self.buffer = self.buffer[:PREFIX + length], self.buffer[PREFIX + length:]
        return raw

    def recv(self, timeout: float = DEFAULT_TIMEOUT) -> Frame:
        """The next frame, unsealed when the connection is authenticated."""
        raw = self.recv_raw_frame(timeout)
        if raw[5] == SEALED and self.opener is not None:
            inner = self.opener.open(raw)
            return parse_body(inner, frame(inner), sealed=True)
        return parse_body(raw[5:], raw)

    def recv_until(self, predicate, timeout: float = DEFAULT_TIMEOUT, answer_pings: bool = True) -> Frame:
        """Reads frames until one satisfies the predicate; answers pings meanwhile (§6)."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            remaining = deadline - time.monotonic()
            try:
                f = self.recv(max(remaining, 0.001))
            except NoFrame:
                raise NoFrame(f"no matching frame within {timeout} s; saw {seen}")
            if predicate(f):
                return f
            seen.append(f)
            if f.kind == PING and answer_pings:
                self.send(pong_body(f.nonce))
            if f.kind == CLOSE:
                raise AssertionError(f"connection closed while waiting: {f}; before it: {seen[:-1]}")

    def recv_message(self, timeout: float = DEFAULT_TIMEOUT, type_name: str | None = None) -> Frame:
        return self.recv_until(lambda f: f.kind == MESSAGE and (type_name is None or f.type_name == type_name),
                               timeout)

    def recv_answer(self, request_id: int, timeout: float = DEFAULT_TIMEOUT) -> Frame:
        """The reply or error-reply to our request `request_id` (§7)."""
        return self.recv_until(lambda f: (f.kind == MESSAGE and f.in_reply_to == request_id)
                               or (f.kind == ERROR_REPLY and f.in_reply_to == request_id), timeout)

    def expect_close(self, code: int, timeout: float = DEFAULT_TIMEOUT, skip_pings: bool = True) -> Frame:
        """Reads until a close frame, which must carry `code`, then the end of the stream."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            try:
                f = self.recv(max(deadline - time.monotonic(), 0.001))
            except Closed as error:
                raise AssertionError(f"connection ended without a close frame ({error}); frames: {seen}")
            if f.kind == CLOSE:
                break
            if not (skip_pings and f.kind in (PING, PONG)):
                seen.append(f)
        assert f.code == code, f"close code {f.code} ({f.code_name}) {f.text!r}, expected {code} ({CODE_NAMES.get(code)})"
        self.expect_eof(max(deadline - time.monotonic(), 1.5))
        return f

    def expect_eof(self, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """Reads until the peer ends the stream; returns whatever bytes came before it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._fill(len(self.buffer) + 1, deadline)
            except Closed:
                data, self.buffer = self.buffer, b""
                return data
            except NoFrame:
                raise AssertionError(f"the connection was not closed within {timeout} s "
                                     f"({len(self.buffer)} bytes received: {self.buffer[:64].hex()})")

    def expect_silence(self, seconds: float) -> None:
        """Asserts that no byte arrives for `seconds` (a bounded read that must time out)."""
        try:
            self._fill(len(self.buffer) + 1, time.monotonic() + seconds)
        except NoFrame:
            return
        raise AssertionError(f"expected nothing, received {self.buffer[:64].hex()}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_hello_json(*, peer_id: str | None = None, name: str = "py-conformance", capabilities=(),
                    accepts=(), auth: dict | None = None, **extra) -> dict:
    hello = {"peerID": peer_id or str(uuid.uuid4()), "name": name, "capabilities": list(capabilities),
             "accepts": list(accepts)}
    if auth is not None:
        hello["auth"] = auth
    hello.update(extra)
    return hello


def connect_tcp(port: int, host: str = "127.0.0.1", source: str | None = None,
                timeout: float = DEFAULT_TIMEOUT, receive_buffer: int | None = None) -> Connection:
    """`receive_buffer` fixes SO_RCVBUF before connecting (which turns the kernel's autotuning off), so that a
    reader that stops reading holds a known, small number of bytes in its kernel buffer."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        if source:
            sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Connection(sock)


def connect_unix(path: str, timeout: float = DEFAULT_TIMEOUT) -> Connection:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(path)
    return Connection(sock)


def send_hello(conn: Connection, hello: dict | bytes, minimum: int = 1, maximum: int = 1) -> bytes:
    data = hello if isinstance(hello, bytes) else json.dumps(hello, separators=(",", ":")).encode()
    raw = frame(hello_body(data, minimum, maximum))
    conn.sent_hello = raw
    conn.send_raw(raw)
    return raw


def handshake(conn: Connection, hello: dict | None = None, *, secret: bytes | None = None,
              offer: Offer | None = None, timeout: float = DEFAULT_TIMEOUT, **hello_fields) -> Connection:
    """Dialer side of §4 (and §4.1 with a secret). Raises AssertionError on a refusal."""
    if secret is not None and offer is None:
        offer = Offer()
    if hello is None:
        hello = make_hello_json(auth=offer.json() if offer else None, **hello_fields)
    conn.hello = hello
    H_d = send_hello(conn, hello)
    f = conn.recv(timeout)
    if f.kind == CLOSE:
        raise AssertionError(f"refused: {f}")
    assert f.kind == HELLO, f
    conn.peer_hello = f
    if secret is None:
        return conn
    # §4.1: the acceptor proves first, right behind its hello.
    auth = f.json["auth"]
    assert auth["scheme"] == SCHEME
    n_a, e_a = base64.b64decode(auth["nonce"]), base64.b64decode(auth["key"])
    conn.schedule = key_schedule(secret, H_d, f.raw, offer.nonce, n_a, offer.public, e_a,
                                 offer.private, e_a)
    proof = conn.recv(timeout)
    if proof.kind == CLOSE:
        raise AssertionError(f"refused after the hellos: {proof}")
    assert proof.kind == AUTH, proof
    conn.acceptor_proof = proof.proof
    assert hmac.compare_digest(proof.proof, conn.schedule.proof["acceptor"]), "the acceptor's proof does not verify"
    conn.send_raw(frame(auth_body(conn.schedule.proof["dialer"])))
    conn.sealer = Sealer(conn.schedule.key["dialer"], conn.schedule.iv["dialer"])
    conn.opener = Sealer(conn.schedule.key["acceptor"], conn.schedule.iv["acceptor"])
    return conn


def dial(port: int, *, secret: bytes | None = None, source: str | None = None, receive_buffer: int | None = None,
         **hello_fields) -> Connection:
    conn = connect_tcp(port, source=source, receive_buffer=receive_buffer)
    try:
        return handshake(conn, secret=secret, **hello_fields)
    except BaseException:
        conn.close()
        raise


# ------------------------------------------------------------------------------------------- devices (§4.2)

def device_fingerprint(certificate_der: bytes) -> bytes:
    """A device's fingerprint: the SHA-256 of its certificate's DER (§4.2)."""
    return hashlib.sha256(certificate_der).digest()


def fingerprint_text(digest: bytes, characters: int = 52) -> str:
    """The base32 form in groups of four: all 52 characters, or the 16 of the short form."""
    text = base64.b32encode(digest).decode().rstrip("=")[:characters]
    return "-".join(text[i:i + 4] for i in range(0, len(text), 4))


def pairing_code(one: bytes, other: bytes) -> str:
    """The six digits two devices show while they pair (§4.2), as `123 456`."""
    low, high = sorted((one, other))
    value = int.from_bytes(hashlib.sha256(b"parley pairing code 1" + low + high).digest()[:8], "big") % 1_000_000
    digits = f"{value:06d}"
    return f"{digits[:3]} {digits[3:]}"


def make_device(directory: str, name: str) -> tuple[str, str, bytes]:
    """A device of the caller's own in `directory`: a P-256 key and a self-signed certificate made with the `openssl`
    command (what a device keeps, §4.2). Answers the certificate's and the key's paths and the device's fingerprint."""
    key, certificate = os.path.join(directory, "key.pem"), os.path.join(directory, "certificate.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", certificate, "-days", "365", "-subj", f"/CN={name}"],
                   check=True, capture_output=True, timeout=30)
    der = subprocess.run(["openssl", "x509", "-in", certificate, "-outform", "DER"], check=True, capture_output=True,
                         timeout=30).stdout
    return certificate, key, device_fingerprint(der)


def connect_device(port: int, certificate: str, key: str, host: str = "127.0.0.1",
                   timeout: float = DEFAULT_TIMEOUT) -> tuple[Connection, bytes]:
    """TLS 1.3 with this device's certificate, Python's `ssl` and nothing else; the server's certificate is not
    checked by a CA but returned (DER) for the caller to compare its fingerprint with the one it trusts."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(certificate, key)
    raw = socket.create_connection((host, port), timeout=timeout)
    try:
        sock = context.wrap_socket(raw)
    except BaseException:
        raw.close()
        raise
    return Connection(sock), sock.getpeercert(binary_form=True)
