"""§4.2 Devices over TLS: a Python peer with nothing but the standard `ssl` module and a certificate of its own
(made here with the `openssl` command) asks to pair, computes the same code as parleyd, is accepted by a person
(`parleyctl pair accept`), then sends records; taken back (`parleyctl unpair`), it is refused."""
import json
import subprocess

from parley_tools import wire
from conftest import Daemon


def ctl(daemon: Daemon, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(daemon.executable.with_name("parleyctl")), *arguments, "--socket", daemon.control_socket],
                          capture_output=True, text=True, timeout=30)


def test_a_python_device_pairs_then_sends_records_then_is_taken_back(start_parleyd, device):
    certificate, key, mine = device
    daemon = start_parleyd()
    status = json.loads(ctl(daemon, "status", "--json").stdout)

    # 1. Unpaired: parleyd's certificate is the one `status` names; the hello is answered with pairing-requested.
    conn, theirs_der = wire.connect_device(daemon.port, certificate, key)
    theirs = wire.device_fingerprint(theirs_der)
    assert wire.fingerprint_text(theirs) == status["fingerprint"]
    code = wire.pairing_code(mine, theirs)
    wire.send_hello(conn, wire.make_hello_json(name="python-peer"))
    refusal = conn.expect_close(wire.CODE_IDS["pairing-requested"])
    assert code in refusal.text and wire.fingerprint_text(mine, 16) in refusal.text, refusal.text
    conn.close()
    pending = json.loads(ctl(daemon, "pair", "--json").stdout)["pending"]
    assert [(p["fingerprint"], p["code"], p["name"]) for p in pending] == [(wire.fingerprint_text(mine), code, "python-peer")]

    # 2. A person compares the codes and accepts; the device gets in and its records are stored.
    accepted = ctl(daemon, "pair", "accept", wire.fingerprint_text(mine, 8))
    assert accepted.returncode == 0, accepted.stderr
    conn, _ = wire.connect_device(daemon.port, certificate, key)
    wire.handshake(conn, name="python-peer")
    batch = {"logs": [{"timeUnixNano": 1_700_000_000_000_000_000, "severity": "info", "label": "py", "message": "sent over TLS"}]}
    conn.send_message("parley.telemetry.Batch", json.dumps(batch).encode())
    conn.assert_alive()
    logs = ctl(daemon, "logs", "--json")
    assert "sent over TLS" in logs.stdout, logs
    devices = json.loads(ctl(daemon, "devices", "--json").stdout)["paired"]
    assert [(d["fingerprint"], d["connected"]) for d in devices] == [(wire.fingerprint_text(mine), True)]

    # 3. Taken back: the open connection is closed at once with device-not-trusted; a new one is a request again.
    assert ctl(daemon, "unpair", wire.fingerprint_text(mine, 16)).returncode == 0
    conn.expect_close(wire.CODE_IDS["device-not-trusted"])
    conn.close()
    conn, _ = wire.connect_device(daemon.port, certificate, key)
    wire.send_hello(conn, wire.make_hello_json(name="python-peer"))
    conn.expect_close(wire.CODE_IDS["pairing-requested"])
    conn.close()


def test_a_peer_in_the_clear_still_meets_parleyds_open_mode(start_parleyd):
    daemon = start_parleyd()
    with daemon.dial() as conn:
        conn.assert_alive()
