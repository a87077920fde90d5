#!/usr/bin/env python3
"""An app written for the original Swift Talk remote debugger, from its framing alone, for Parley's end-to-end tests.

It does what such an app does: browse _debug._tcp (python-zeroconf) or take an address, connect over TCP, write
one frame per state change -- byte 206, a 4-byte little-endian length, then the JSON
{"state": <state>, "action": "<action>", "imageData": "<base64 PNG>"} -- and read frames of the same framing whose
JSON body is a bare state, which it "applies".

  original_debugger_app.py (--browse [--name-contains TEXT] | --connect HOST PORT)
                           [--send ACTION STATE_JSON_BASE64 PNG_BASE64]... [--expect N] [--timeout S]

--browse finds the debugger by DNS-SD (python-zeroconf; run it inside a lab host only). Each --send writes one
frame; the state text is used byte for byte. Then it waits until N states have come back (or --timeout passes,
exit status 1) and exits.

Events on stdout, one JSON object per line:
  {"event": "connected", "host": ..., "port": ...}
  {"event": "sent", "action": ...}
  {"event": "received", "state": "<base64 of the exact JSON bytes received>"}
  {"event": "closed"}
"""
import argparse
import base64
import json
import socket
import struct
import sys
import threading
import time

START_BYTE = 206


def emit(event, **fields):
    fields["event"] = event
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def browse(name_contains, timeout=20.0):
    from zeroconf import ServiceBrowser, ServiceListener, Zeroconf

    found = []
    done = threading.Event()

    class Listener(ServiceListener):
        def add_service(self, zc, type_, name):
            if name_contains and name_contains not in name:
                return
            info = zc.get_service_info(type_, name, timeout=3000)
            if info and info.parsed_addresses():
                found.append((info.parsed_addresses()[0], info.port))
                done.set()

        def update_service(self, zc, type_, name):
            pass

        def remove_service(self, zc, type_, name):
            pass

    zc = Zeroconf()
    try:
        ServiceBrowser(zc, "_debug._tcp.local.", Listener())
        if not done.wait(timeout):
            raise SystemExit("no _debug._tcp service found within %.0f s" % timeout)
        return found[0]
    finally:
        zc.close()


def read_exactly(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def reader(sock, received):
    while True:
        header = read_exactly(sock, 5)
        if header is None:
            emit("closed")
            return
        if header[0] != START_BYTE:
            emit("error", message="unexpected start byte %d" % header[0])
            return
        (length,) = struct.unpack("<i", header[1:5])
        body = read_exactly(sock, length)
        if body is None:
            emit("closed")
            return
        json.loads(body)  # the app decodes the state it is given; a body that is not JSON would fail here
        received.append(body)
        emit("received", state=base64.b64encode(body).decode("ascii"))


def frame(action, state_bytes, png_bytes):
    # The body is assembled as text so the state keeps its exact bytes (key order, number spelling).
    body = (
        b'{"state":' + state_bytes + b',"action":' + json.dumps(action).encode("utf-8")
        + b',"imageData":"' + base64.b64encode(png_bytes) + b'"}'
    )
    return bytes([START_BYTE]) + struct.pack("<i", len(body)) + body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browse", action="store_true")
    parser.add_argument("--name-contains", default="")
    parser.add_argument("--connect", nargs=2, metavar=("HOST", "PORT"))
    parser.add_argument("--send", nargs=3, action="append", default=[], metavar=("ACTION", "STATE", "PNG"))
    parser.add_argument("--expect", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30)
    arguments = parser.parse_args()
    if arguments.browse:
        host, port = browse(arguments.name_contains)
    else:
        host, port = arguments.connect[0], int(arguments.connect[1])
    sock = socket.create_connection((host, port), timeout=10)
    sock.settimeout(None)
    emit("connected", host=host, port=port)
    received = []
    thread = threading.Thread(target=reader, args=(sock, received), daemon=True)
    thread.start()
    for action, state, png in arguments.send:
        sock.sendall(frame(action, base64.b64decode(state), base64.b64decode(png)))
        emit("sent", action=action)
    deadline = time.monotonic() + arguments.timeout
    while len(received) < arguments.expect and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    sock.close()
    if len(received) < arguments.expect:
        emit("timeout", received=len(received))
        sys.exit(1)


if __name__ == "__main__":
    main()
