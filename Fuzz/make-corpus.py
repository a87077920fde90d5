#!/usr/bin/env python3
"""Writes the seed corpus (Fuzz/corpus/<target>/) from the examples below. The files are committed; run this
again only to change the seeds. Each file is one input in the format its fuzzer reads (see the fuzzer's doc
comment): a few choice bytes, then a byte stream or payload."""
import json, os, struct, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

def frame(body, start=0xCF):
    return bytes([start]) + struct.pack("<I", len(body)) + body

def hello(json_text=None, lo=1, hi=1):
    if json_text is None:
        json_text = json.dumps({"peerID": "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11", "name": "tablet",
                                "capabilities": ["heartbeat"], "accepts": ["listr.ItemAdded"]})
    return frame(struct.pack("<BHH", 0x01, lo, hi) + json_text.encode())

def message(name=b"listr.AddItemCommand", payload=b'{"title":"milk"}', flags=1, mid=1, reply=0, name_len=None):
    n = len(name) if name_len is None else name_len
    return frame(struct.pack("<BBQQH", 0x10, flags, mid, reply, n) + name + payload)

def error_reply(reply=1, code=5, text=b'no handler for message type "x"'):
    return frame(struct.pack("<BQH", 0x11, reply, code) + text)

def close(code=0, text=b"tablet is shutting down"):
    return frame(struct.pack("<BH", 0x30, code) + text)

ping = frame(struct.pack("<BQ", 0x20, 1))
pong = frame(struct.pack("<BQ", 0x21, 1))
original_json = b'{"state":{"count":1},"action":"increment","imageData":"iVBORw0KGgo="}'
original = frame(original_json, start=0xCE)

def frames_input(stream, maximum=5, splits=()):
    return bytes([maximum, len(splits)]) + b"".join(struct.pack("<H", s) for s in splits) + stream

def handshake_input(stream, minimum=1, span=0, secret=False):
    return bytes([1 if secret else 0, minimum, span]) + stream

# The handshake fuzzer's stand-in authenticator: scheme "fuzz", one fixed proof both ways.
FUZZ_OFFER = {"scheme": "fuzz", "nonce": "bm9uY2U=", "key": "a2V5"}
FUZZ_PROOF = frame(b"\x02parley-fuzz-proof")
def auth_hello(offer=FUZZ_OFFER):
    return hello(json.dumps({"peerID": "c0a80f2e-4b1d-4e6a-8f3c-9d2e1b7a5c40", "name": "server",
                             "capabilities": ["heartbeat"], "accepts": [], "auth": offer}))

# The payload fuzzer's selector: 0 hello JSON, then FrameKind.allCases in order, then "own kind byte".
KINDS = ["hello", "auth", "sealed", "message", "error-reply", "ping", "pong", "close"]
def kind_selector(name):
    return KINDS.index(name) + 1
RAW_SELECTOR = len(KINDS) + 1

def payload_input(selector, payload):
    return bytes([selector]) + payload

exchange = hello() + message() + message(b"listr.ItemAdded", b'{"count":3}', flags=0, reply=1) + ping + pong + close()
seeds = {
    "frames": {
        "exchange": frames_input(exchange, splits=(3, 40, 140)),
        "hello": frames_input(hello()),
        "request-split": frames_input(hello() + message(), splits=(1, 5, 150, 160)),
        "original": frames_input(original + original, splits=(1, 3)),
        "close": frames_input(close(13, b"protocol-violation")),
        "error-reply": frames_input(error_reply()),
        "ping-pong": frames_input(ping + pong),
        "auth": frames_input(frame(b"\x02opaque")),
        "sealed": frames_input(frame(b"\x03" + bytes(range(24)))),
        "sealed-too-short": frames_input(frame(b"\x03" + bytes(3))),
        "truncated-message": frames_input(message()[:30]),
        "truncated-prefix": frames_input(b"\xcf\x10\x00"),
        "oversized": frames_input(b"\xcf" + struct.pack("<I", 5000) + b"\x10", maximum=4),
        "negative-original": frames_input(b"\xce" + struct.pack("<i", -1)),
        "wrong-start": frames_input(b"GET / HTTP/1.1\r\n\r\n"),
        "empty-body": frames_input(frame(b"")),
        "id-zero": frames_input(message(mid=0)),
        "name-length-zero": frames_input(message(name_len=0)),
        "name-too-long": frames_input(message(name=b"n" * 1025)),
        "name-past-body": frames_input(message(name=b"abc", payload=b"", name_len=9)),
        "invalid-utf8-name": frames_input(message(name=b"\xff\xfe" * 8)),
        "ping-long": frames_input(frame(struct.pack("<BQ", 0x20, 1) + b"x")),
        "unknown-kind": frames_input(frame(b"\x7f")),
    },
    "handshake": {
        "hello": handshake_input(hello()),
        "hello-then-message": handshake_input(hello() + message()),
        "open-node-hello-with-auth": handshake_input(auth_hello()),
        "secret-hello-proof": handshake_input(auth_hello() + FUZZ_PROOF, secret=True),
        "secret-hello-proof-message": handshake_input(auth_hello() + FUZZ_PROOF + message(), secret=True),
        "secret-wrong-proof": handshake_input(auth_hello() + frame(b"\x02not the proof"), secret=True),
        "secret-hello-then-message": handshake_input(auth_hello() + message(), secret=True),
        "secret-other-scheme": handshake_input(auth_hello(dict(FUZZ_OFFER, scheme="psk-x25519-chachapoly-v1")) + FUZZ_PROOF, secret=True),
        "secret-peer-without": handshake_input(hello() + FUZZ_PROOF, secret=True),
        "secret-refused-close": handshake_input(auth_hello() + close(12, b"authentication-required"), secret=True),
        "versions-9": handshake_input(hello(lo=9, hi=9)),
        "versions-0-3": handshake_input(hello(lo=0, hi=3), minimum=1, span=2),
        "invalid-json": handshake_input(hello("{this is not json")),
        "not-a-uuid": handshake_input(hello(json.dumps({"peerID": "x", "name": "n", "capabilities": [], "accepts": []}))),
        "missing-key": handshake_input(hello(json.dumps({"peerID": "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11"}))),
        "close": handshake_input(close(1, b"incompatible-version")),
        "message-first": handshake_input(message()),
        "ping-first": handshake_input(ping),
        "long-close-reason": handshake_input(close(11, b"r" * 3000)),
        "long-peer-id": handshake_input(hello(json.dumps({"peerID": "p" * 3000, "name": "n", "capabilities": [], "accepts": []}))),
    },
    "payloads": {
        "hello-json": payload_input(0, json.dumps({"peerID": "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11", "name": "tablet",
            "capabilities": ["heartbeat"], "accepts": ["a", "b"]}).encode()),
        "hello-json-unicode": payload_input(0, '{"peerID":"6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11","name":"\\u540d\\u524d \\ud83d\\ude00","capabilities":[],"accepts":[],"extra":{"n":[1,2.5e300,null,true]}}'.encode()),
        "hello-json-auth": payload_input(0, b'{"peerID":"a","name":"b","capabilities":[],"accepts":[],"auth":{"scheme":"s","nonce":"n"}}'),
        "hello-body": payload_input(kind_selector("hello"), struct.pack("<HH", 1, 1) + b'{"peerID":"a"}'),
        "auth-body": payload_input(kind_selector("auth"), b"opaque"),
        "sealed-body": payload_input(kind_selector("sealed"), bytes(range(40))),
        "sealed-too-short": payload_input(kind_selector("sealed"), bytes(10)),
        "message-body": payload_input(kind_selector("message"), message()[6:]),
        "error-reply-body": payload_input(kind_selector("error-reply"), error_reply()[6:]),
        "ping-body": payload_input(kind_selector("ping"), struct.pack("<Q", 7)),
        "pong-body": payload_input(kind_selector("pong"), struct.pack("<Q", 7)),
        "close-body": payload_input(kind_selector("close"), close(9, b"another connection to this peer is kept")[6:]),
        "unknown-kind": payload_input(RAW_SELECTOR, b"\x7fbody"),
    },
    # DebuggerFuzzer: a selector (0 JSON, 1 original-framing payload, 2 typed record), then the document.
    "debugger": {
        "json-object": b"\x00" + b'{"count":1.10,"big":12345678901234567890,"items":[{"title":"milk"}],"z":null,"a":true}',
        "json-array": b"\x00" + b'[1,2,[3,{"a":"\\u00e9\\ud83d\\ude00"}],-0.5e10]',
        "json-truncated": b"\x00" + b'{"a":',
        "json-lone-surrogate": b"\x00" + b'"\\ud800"',
        "original-payload": b"\x01" + original_json,
        "original-bad": b"\x01" + b'{"state":"not an object","action":1}',
        "record": b"\x02" + struct.pack("<II", 5, 7) + b"tap.1" + b'{"n":1}',
    },
}

for target, files in seeds.items():
    directory = os.path.join(HERE, "corpus", target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(files)} seeds")
