"""§4.1 Authentication and encryption with a shared secret: the hello offers, the proofs, sealed frames, and
the refusals, against a parleyd started with --secret-file (and once as the dialer, with --static-peer)."""
import base64
import hmac
import json
import os
import socket
import struct
import subprocess

import pytest

from parley_tools import wire
from conftest import PARLEYD, Daemon

# Random bytes, fixed so that a failure can be replayed: parleyd refuses a secret file holding a pattern (§4.1).
SECRET = bytes.fromhex("1ff8bbf5635013fe9369ba105cb504fb5875a82d8df7b56396b91d5cf2c41c8e")


@pytest.fixture(scope="module")
def secret_parleyd(start_parleyd):
    # A small frame limit (for the sealed-frame limit) and a short handshake timeout (for the proof deadline).
    return start_parleyd("--handshake-timeout", "1s", "--max-frame-size", "1024", secret=SECRET)


def start_authenticated(conn, offer=None, **hello_fields):
    """Sends our hello with an offer, reads the acceptor's hello and proof; returns the key schedule."""
    offer = offer or wire.Offer()
    H_d = wire.send_hello(conn, wire.make_hello_json(auth=offer.json(), **hello_fields))
    hello = conn.recv()
    assert hello.kind == wire.HELLO, hello
    proof = conn.recv()
    assert proof.kind == wire.AUTH, proof
    auth = hello.json["auth"]
    n_a, e_a = base64.b64decode(auth["nonce"]), base64.b64decode(auth["key"])
    schedule = wire.key_schedule(SECRET, H_d, hello.raw, offer.nonce, n_a, offer.public, e_a, offer.private, e_a)
    return schedule, proof


def switch_to_sealed(conn, schedule, role="dialer"):
    """From now on `conn` seals what it sends with `role`'s key and opens what it reads with the other side's."""
    other = "acceptor" if role == "dialer" else "dialer"
    conn.sealer = wire.Sealer(schedule.key[role], schedule.iv[role])
    conn.opener = wire.Sealer(schedule.key[other], schedule.iv[other])


# ------------------------------------------------------------------------------------------- the document

def test_key_schedule_reproduces_the_documented_test_vector():
    seq = lambda start: bytes((start + i) % 256 for i in range(32))
    dialer, acceptor = wire.Offer(seq(0x20), seq(0x60)), wire.Offer(seq(0x40), seq(0x80))
    H_d = wire.frame(wire.hello_body(b'{"d":1}'))
    H_a = wire.frame(wire.hello_body(b'{"a":1}'))
    assert H_d[:10] == bytes.fromhex("cf0c000000010100 0100".replace(" ", ""))
    s = wire.key_schedule(seq(0x00), H_d, H_a, dialer.nonce, acceptor.nonce, dialer.public, acceptor.public,
                          dialer.private, acceptor.public)
    assert dialer.public.hex() == "675dd574ed7789310b3d2e7681f3790b466c773b1521fecf36577958371ea52f"
    assert acceptor.public.hex() == "493e82fc74464a59268817623d2053c5eb8e2cc4a988b4fee179ec6b010d531d"
    assert s.h.hex() == "0232cc44c983bde4b9b205569c763911902ae74121d16daddbebdcaedd74121a"
    assert s.proof["dialer"].hex() == "87020a1f16300d1123bd4c2cddb6c86a5a63846e746659a87c9b37099550083a"
    assert s.proof["acceptor"].hex() == "aa1b7d0842bf0b00db1b06aa8a00ddd2c79db03b07a801f3a665dd5ac4e597c2"
    assert s.key["dialer"].hex() == "f4053cef2c9ad0f290237f2afc06a57b251603d27eabf4723ba656d372fcbb81"
    assert s.iv["dialer"].hex() == "49d848134c6052ca314611af"
    sealer = wire.Sealer(s.key["dialer"], s.iv["dialer"])
    assert sealer.seal(wire.ping_body(1)).hex() == "cf1a00000003a1301fc69a35a1c87582f8cb907dc223a10688a341185dd46f"
    assert sealer.seal(wire.ping_body(1)).hex() == "cf1a0000000340ccfaae32d2fc21def8c8636d89c28986b1f100a01d2a5982"
    # The acceptor computes the same traffic keys from its own private key and the dialer's public key.
    mirror = wire.key_schedule(seq(0x00), H_d, H_a, dialer.nonce, acceptor.nonce, dialer.public,
                               acceptor.public, acceptor.private, dialer.public)
    assert (mirror.key, mirror.iv) == (s.key, s.iv)


# ------------------------------------------------------------------------------------------- success

def test_acceptor_hello_carries_an_offer(secret_parleyd):
    with secret_parleyd.dial() as conn:
        auth = conn.peer_hello.json["auth"]
        assert auth["scheme"] == wire.SCHEME
        # 32 bytes each, standard base64 with padding (§4 Hello JSON).
        for key in ("nonce", "key"):
            assert len(base64.b64decode(auth[key], validate=True)) == 32
            assert auth[key].endswith("=") and len(auth[key]) == 44


def test_acceptor_proves_first_right_behind_its_hello(secret_parleyd):
    with secret_parleyd.connect() as conn:
        schedule, proof = start_authenticated(conn)
        # §3 auth: 32 bytes of HMAC-SHA256; it verifies against our transcript.
        assert len(proof.body) == 33
        assert hmac.compare_digest(proof.proof, schedule.proof["acceptor"])


def test_sealed_request_gets_a_sealed_error_reply(secret_parleyd):
    with secret_parleyd.dial() as conn:
        rid = conn.send_message("conf.NobodyHandlesThis", b"{}", request=True)
        answer = conn.recv_answer(rid)
        assert answer.sealed and answer.code == wire.UNKNOWN_TYPE, answer


def test_sealed_ping_gets_a_sealed_pong(secret_parleyd):
    with secret_parleyd.dial(capabilities=["heartbeat"]) as conn:
        conn.send(wire.ping_body(0x1122334455667788))
        pong = conn.recv_until(lambda f: f.kind == wire.PONG)
        assert pong.sealed and pong.nonce == 0x1122334455667788
        # Parley's own pings arrive sealed too, with nonces counting from 1 (§6).
        ping = conn.recv_until(lambda f: f.kind == wire.PING)
        assert ping.sealed and ping.nonce == 1


def test_sealed_frames_right_behind_the_proof_are_held_until_it_verifies(secret_parleyd):
    with secret_parleyd.connect() as conn:
        schedule, _ = start_authenticated(conn)
        switch_to_sealed(conn, schedule)
        # The proof and a sealed request in one write (§4.1 "Parley holds such frames").
        conn.send_raw(wire.frame(wire.auth_body(schedule.proof["dialer"]))
                      + conn.sealer.seal(wire.message_body("conf.NobodyHandlesThis", b"{}", id=1,
                                                            flags=wire.EXPECTS_REPLY)))
        answer = conn.recv_answer(1)
        assert answer.sealed and answer.code == wire.UNKNOWN_TYPE


def test_the_limit_applies_to_the_frame_inside_a_sealed_frame(secret_parleyd):
    with secret_parleyd.dial() as conn:
        # §2: the inner frame may be as large as the maximum (1024); the sealed frame is 17 bytes longer.
        name = b"conf.NobodyHandlesThis"
        rid = conn.new_id()
        conn.send(wire.message_body(name, b"p" * (1024 - 20 - len(name)), id=rid, flags=wire.EXPECTS_REPLY))
        assert conn.recv_answer(rid).code == wire.UNKNOWN_TYPE
        rid = conn.new_id()
        conn.send(wire.message_body(name, b"p" * (1025 - 20 - len(name)), id=rid, flags=wire.EXPECTS_REPLY))
        close = conn.expect_close(wire.FRAME_TOO_LARGE)
        assert close.sealed


# ------------------------------------------------------------------------------------------- refusals

def test_wrong_proof_is_refused_with_authentication_failed(secret_parleyd):
    with secret_parleyd.connect() as conn:
        schedule, _ = start_authenticated(conn)
        wrong = bytearray(schedule.proof["dialer"])
        wrong[0] ^= 1
        conn.send_raw(wire.frame(wire.auth_body(bytes(wrong))))
        close = conn.expect_close(wire.AUTHENTICATION_FAILED)
        assert not close.sealed


def test_a_proof_made_with_another_secret_is_refused(secret_parleyd):
    with secret_parleyd.connect() as conn:
        offer = wire.Offer()
        H_d = wire.send_hello(conn, wire.make_hello_json(auth=offer.json()))
        hello, proof = conn.recv(), conn.recv()
        auth = hello.json["auth"]
        n_a, e_a = base64.b64decode(auth["nonce"]), base64.b64decode(auth["key"])
        other = wire.key_schedule(bytes(32), H_d, hello.raw, offer.nonce, n_a, offer.public, e_a, offer.private, e_a)
        # With another secret the acceptor's proof does not verify on our side either.
        assert not hmac.compare_digest(proof.proof, other.proof["acceptor"])
        conn.send_raw(wire.frame(wire.auth_body(other.proof["dialer"])))
        conn.expect_close(wire.AUTHENTICATION_FAILED)


def test_a_proof_of_another_length_fails_to_verify(secret_parleyd):
    with secret_parleyd.connect() as conn:
        schedule, _ = start_authenticated(conn)
        conn.send_raw(wire.frame(wire.auth_body(schedule.proof["dialer"][:31])))
        conn.expect_close(wire.AUTHENTICATION_FAILED)


def test_hello_without_an_offer_is_refused_with_authentication_required(secret_parleyd):
    with secret_parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json())
        conn.expect_close(wire.AUTHENTICATION_REQUIRED)


def bad_offer(**changes):
    offer = wire.Offer().json()
    for key, value in changes.items():
        if value is None:
            del offer[key]
        else:
            offer[key] = value
    return offer


@pytest.mark.parametrize("auth", [
    bad_offer(scheme="psk-other-v9"),
    bad_offer(nonce=base64.b64encode(b"short").decode()),
    bad_offer(key=base64.b64encode(bytes(31)).decode()),
    bad_offer(key=None),
    bad_offer(nonce="not base64!"),
], ids=["unknown-scheme", "short-nonce", "short-key", "missing-key", "nonce-not-base64"])
def test_a_wrong_offer_is_refused_with_protocol_violation(secret_parleyd, auth):
    with secret_parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json(auth=auth))
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_a_low_order_key_giving_an_all_zero_secret_is_refused(secret_parleyd):
    with secret_parleyd.connect() as conn:
        # The X25519 point 0 makes every shared secret all-zero (§4.1 "all-zero result: refused").
        wire.send_hello(conn, wire.make_hello_json(auth=bad_offer(key=base64.b64encode(bytes(32)).decode())))
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_no_proof_within_the_handshake_timeout(secret_parleyd):
    with secret_parleyd.connect() as conn:
        start_authenticated(conn)
        # §4 step 9: with a secret the deadline covers the hello and the proof.
        conn.expect_close(wire.HANDSHAKE_TIMEOUT, timeout=4)


def test_plaintext_frame_after_the_switch_is_a_protocol_violation(secret_parleyd):
    with secret_parleyd.dial() as conn:
        conn.assert_alive()  # a sealed round trip: the acceptor has certainly switched
        conn.send_raw(wire.frame(wire.message_body("conf.X", b"{}", id=99)))
        close = conn.expect_close(wire.PROTOCOL_VIOLATION)
        assert close.sealed


def test_plaintext_frame_right_behind_the_dialers_proof_is_a_protocol_violation(secret_parleyd):
    with secret_parleyd.connect() as conn:
        schedule, _ = start_authenticated(conn)
        switch_to_sealed(conn, schedule)
        # The proof and a plaintext request in one write, as an attacker on the path would append it.
        conn.send_raw(wire.frame(wire.auth_body(schedule.proof["dialer"]))
                      + wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=1,
                                                     flags=wire.EXPECTS_REPLY)))
        first = conn.recv(3)
        assert (first.kind, first.code) == (wire.CLOSE, wire.PROTOCOL_VIOLATION), \
            f"the injected plaintext request was handled: {first}"


def test_sealed_frames_pipelined_behind_the_proof_then_a_half_close_are_all_handled(secret_parleyd):
    # §4.1: a sealed frame may arrive right behind the dialer's proof. Twenty requests sealed behind the proof,
    # all in one write, then the end of our sending side: every one is answered before the connection ends.
    with secret_parleyd.connect() as conn:
        schedule, _ = start_authenticated(conn)
        switch_to_sealed(conn, schedule)
        burst = wire.frame(wire.auth_body(schedule.proof["dialer"]))
        for request in range(1, 21):
            burst += conn.sealer.seal(wire.message_body("conf.NobodyHandlesThis", b"{}", id=request, flags=wire.EXPECTS_REPLY))
        conn.send_raw(burst)
        conn.half_close()
        answered = {conn.recv_answer(request).code for request in range(1, 21)}
        assert answered == {wire.UNKNOWN_TYPE}


def test_altered_sealed_frame_fails_authentication(secret_parleyd):
    with secret_parleyd.dial() as conn:
        sealed = bytearray(conn.sealer.seal(wire.message_body("conf.X", b"{}", id=1)))
        sealed[8] ^= 0x01
        conn.send_raw(bytes(sealed))
        close = conn.expect_close(wire.AUTHENTICATION_FAILED)
        assert close.sealed


def test_replayed_sealed_frame_fails_authentication(secret_parleyd):
    with secret_parleyd.dial() as conn:
        sealed = conn.sealer.seal(wire.message_body("conf.NobodyHandlesThis", b"{}", id=1, flags=wire.EXPECTS_REPLY))
        conn.send_raw(sealed + sealed)
        # The first is handled, the replay fails its tag (the counter moved on).
        assert conn.recv_answer(1).code == wire.UNKNOWN_TYPE
        conn.expect_close(wire.AUTHENTICATION_FAILED)


def test_a_dropped_sealed_frame_makes_the_next_one_fail(secret_parleyd):
    with secret_parleyd.dial() as conn:
        conn.sealer.seal(wire.message_body("conf.X", b"{}", id=1))  # sealed with counter 0, never sent
        conn.send(wire.message_body("conf.X", b"{}", id=2))          # counter 1
        conn.expect_close(wire.AUTHENTICATION_FAILED)


def test_original_framing_is_refused_at_once_without_a_byte(secret_parleyd):
    with secret_parleyd.connect() as app:
        app.send_raw(wire.original_frame(b'{"state":{},"action":"a","imageData":""}'))
        assert app.expect_eof(3) == b""


def test_original_framing_allowed_when_configured(start_parleyd):
    daemon = start_parleyd("--allow-original-framing-without-secret", secret=SECRET)
    follower = daemon.control()  # local clients are never asked for the secret (§1)
    with follower:
        rid = follower.send_message("parley.debugger.Follow", b"{}", request=True)
        follower.recv_answer(rid)
        with daemon.connect() as app:
            app.send_raw(wire.original_frame(b'{"state":{"n":1},"action":"allowed","imageData":""}'))
            entry = json.loads(follower.recv_message(type_name="parley.debugger.Appended").payload)["entry"]
            assert entry["action"] == "allowed"
    daemon.stop()


# ------------------------------------------------------------------------------------------- the secret file

def test_a_base64_secret_file_is_accepted(start_parleyd, tmp_path):
    path = tmp_path / "secret-b64"
    path.write_text(base64.b64encode(SECRET).decode() + "\n")
    path.chmod(0o600)
    daemon = start_parleyd("--secret-file", str(path))
    with wire.dial(daemon.port, secret=SECRET) as conn:
        conn.assert_alive()
    daemon.stop()


def test_a_secret_file_readable_by_others_is_refused(tmp_path):
    path = tmp_path / "secret-open"
    path.write_text(SECRET.hex() + "\n")
    path.chmod(0o644)
    result = subprocess.run([str(PARLEYD), "--no-discovery", "--port", "0", "--data-directory", str(tmp_path),
                             "--control-socket", str(tmp_path / "ctl.sock"), "--secret-file", str(path)],
                            capture_output=True, text=True, timeout=30)
    # docs/operations.md: a configuration error, status 2, naming the file and its mode.
    assert result.returncode == 2, result
    assert "0644" in result.stderr


# ------------------------------------------------------------------------------------------- parleyd dials

def parleyd_dialing_us(start_parleyd, *args):
    """A parleyd with a secret and our listener as its static peer (plus `args`), and the connection it dialled."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        daemon = start_parleyd("--static-peer", f"127.0.0.1:{listener.getsockname()[1]}", *args, secret=SECRET)
        listener.settimeout(10)
        sock, _ = listener.accept()
    return daemon, wire.Connection(sock)


@pytest.fixture
def dialing_secret_parleyd(start_parleyd):
    daemon, conn = parleyd_dialing_us(start_parleyd)
    yield daemon, conn
    conn.close()
    daemon.stop()


def accept_authenticated(conn, proof_secret=SECRET, **hello_fields):
    """Acceptor side of §4.1: read the dialer's hello, answer with ours and our proof."""
    H_d = conn.recv_raw_frame(5)
    dialer_hello = wire.parse_body(H_d[5:], H_d)
    auth = dialer_hello.json["auth"]
    n_d, e_d = base64.b64decode(auth["nonce"]), base64.b64decode(auth["key"])
    offer = wire.Offer()
    hello_fields.setdefault("name", "py-acceptor")
    H_a = wire.send_hello(conn, wire.make_hello_json(auth=offer.json(), **hello_fields))
    schedule = wire.key_schedule(proof_secret, H_d, H_a, n_d, offer.nonce, e_d, offer.public, offer.private, e_d)
    conn.send_raw(wire.frame(wire.auth_body(schedule.proof["acceptor"])))
    return schedule


def test_as_dialer_parleyd_proves_only_after_the_acceptors_proof_verifies(dialing_secret_parleyd):
    _, conn = dialing_secret_parleyd
    schedule = accept_authenticated(conn)
    proof = conn.recv()
    assert proof.kind == wire.AUTH and hmac.compare_digest(proof.proof, schedule.proof["dialer"]), proof
    switch_to_sealed(conn, schedule, role="acceptor")
    conn.assert_alive()


def test_as_dialer_parleyd_refuses_a_wrong_acceptor_proof_without_proving_itself(dialing_secret_parleyd):
    _, conn = dialing_secret_parleyd
    accept_authenticated(conn, proof_secret=bytes(32))
    # §4.1: the dialer checks the acceptor's proof; if wrong: close(11), and its own proof never goes out.
    close = conn.recv()
    assert (close.kind, close.code) == (wire.CLOSE, wire.AUTHENTICATION_FAILED), close
    assert conn.expect_eof(3) == b""


def test_a_duplicate_close_hands_the_peer_over_to_a_connection_from_another_address(start_parleyd):
    """§8: both sides dialled; we keep the connection we dialled (our id is the smaller) and close parleyd's with
    duplicate-connection while ours is still in its handshake there, from another address (as when one side dials
    IPv4 and the other IPv6). parleyd hands the peer over: it never reports it gone in between."""
    peer_id = "00000000-0000-4000-8000-000000000000"
    daemon, dialled_by_parleyd = parleyd_dialing_us(start_parleyd, "--log-level", "debug")
    assert peer_id < daemon.peer_id.lower()
    with dialled_by_parleyd:
        schedule = accept_authenticated(dialled_by_parleyd, peer_id=peer_id, name="handed-over")
        proof = dialled_by_parleyd.recv()
        assert proof.kind == wire.AUTH, proof
        switch_to_sealed(dialled_by_parleyd, schedule, role="acceptor")
        dialled_by_parleyd.assert_alive()

        # Ours, from 127.0.0.2: hellos exchanged, parleyd's proof read, ours held back.
        with daemon.connect(source="127.0.0.2") as dialled_by_us:
            ours, _ = start_authenticated(dialled_by_us, peer_id=peer_id, name="handed-over")

            mark = daemon.mark()
            dialled_by_parleyd.send(wire.close_body(wire.DUPLICATE_CONNECTION, "another connection is kept"))
            dialled_by_parleyd.expect_eof()
            dialled_by_parleyd.close()
            # That connection is over, as far as parleyd is concerned, before ours completes.
            daemon.wait_for_line("peer connection closed", start=mark)

            dialled_by_us.send_raw(wire.frame(wire.auth_body(ours.proof["dialer"])))
            switch_to_sealed(dialled_by_us, ours)
            dialled_by_us.assert_alive()
        # Events are logged in order: once this departure is, any earlier one would be too.
        daemon.wait_for_line("peer disconnected", start=mark)
    events = [line for line in daemon.log().splitlines() if f"peer-id={peer_id}" in line]
    assert sum(": peer disconnected " in line for line in events) == 1, "\n".join(events)
    assert sum(": peer connected " in line for line in events) == 1, "\n".join(events)
