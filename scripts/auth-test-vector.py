#!/usr/bin/env python3
"""Computes the test vector of docs/protocol.md §4.1 (scheme psk-x25519-chachapoly-v1) from the documented
formulas alone, with the `cryptography` package, as an implementation in another language would.
Tests/ParleySecurityTests/TestVectorTests.swift checks Parley's own key schedule against these values."""
import hashlib, hmac, struct
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import os
import sys
# The project's own Python package, from this checkout (scripts/require-packages also installs it).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "python"))
from parley_tools.wire import frame, hello_body, hkdf_expand

def seq(start):
    return bytes((start + i) % 256 for i in range(32))

def hello_frame(json):
    return frame(hello_body(json))

K = seq(0x00)
n_d, n_a = seq(0x20), seq(0x40)
x_d, x_a = X25519PrivateKey.from_private_bytes(seq(0x60)), X25519PrivateKey.from_private_bytes(seq(0x80))
raw = lambda key: key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
e_d, e_a = raw(x_d), raw(x_a)
H_d, H_a = hello_frame(b'{"d":1}'), hello_frame(b'{"a":1}')

h = hashlib.sha256(b"parley psk-x25519-chachapoly-v1" + H_d + H_a + n_d + n_a + e_d + e_a).digest()
proof = {r: hmac.new(K, b"parley proof " + r.encode() + h, hashlib.sha256).digest() for r in ("dialer", "acceptor")}
dh = x_d.exchange(x_a.public_key())
assert dh == x_a.exchange(x_d.public_key())
prk = hmac.new(K, dh, hashlib.sha256).digest()  # HKDF-Extract(salt K, ikm dh)
key_d = hkdf_expand(prk, b"parley key sent by dialer" + h, 32)
iv_d = hkdf_expand(prk, b"parley iv sent by dialer" + h, 12)

inner = bytes([0x20]) + struct.pack("<Q", 1)                 # the inner frame's body: ping, nonce 1
sealed_length = 1 + len(inner) + 16
header = bytes([0xCF]) + struct.pack("<I", sealed_length) + bytes([0x03])
def nonce(counter):
    return bytes(a ^ b for a, b in zip(iv_d, bytes(4) + struct.pack(">Q", counter)))
first = header + ChaCha20Poly1305(key_d).encrypt(nonce(0), inner, header)
second = header + ChaCha20Poly1305(key_d).encrypt(nonce(1), inner, header)

for name, value in [("e_d", e_d), ("e_a", e_a), ("h", h), ("proof_dialer", proof["dialer"]),
                    ("proof_acceptor", proof["acceptor"]), ("key_dialer", key_d), ("iv_dialer", iv_d),
                    ("sealed ping 1, first frame", first), ("sealed ping 1, second frame", second)]:
    print(f"{name}: {value.hex()}")
