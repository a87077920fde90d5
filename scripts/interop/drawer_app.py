#!/usr/bin/env python3
"""An app that offers a debug drawer, written from docs/protocol.md and docs/drawer.md alone (not from the Swift
sources), for Parley's end-to-end tests of the drawer.

  drawer_app.py --connect HOST PORT [--name NAME] [--no-heartbeat]
                [--change-after SECONDS ITEM=VALUE]... [--refuse ITEM]...

It dials parleyd over TCP (typed protocol, open mode), says hello (accepting parley.drawer.Set and
parley.drawer.Invoke), asks parleyd for its remembered values (parley.drawer.Remembered), applies those that fit,
and declares its drawer: one item of each kind --

  network.slow  toggle  false        remember: true   section Network
  latency       number  0            min 0, max 5000, step 100, section Network
  theme         choice  "light"      options light, dark, section Appearance
  greeting      text    "Hello"      maxLength 64, section Appearance
  reset         action               destructive: true; puts every setting back to its default (each change sent
                                       as Changed)
  build         info    "drawer_app.py 1 (Python X.Y)"

It answers Set and Invoke (checking the value against its own declaration again: docs/drawer.md says the app
validates too) with parley.drawer.Result, or an error reply handler-failed (8) with its reason. --refuse ITEM
makes it refuse every Set or Invoke of ITEM (so that a test can see an app's refusal). --change-after SECONDS ITEM=VALUE
changes a value itself after that many seconds from the declaration and tells parleyd (parley.drawer.Changed);
VALUE is JSON (true, 300, "dark") or, for text and choice, bare text.

Events on stdout, one JSON object per line, flushed, each with "time" (Unix time in seconds, when it was written):
  {"event": "connected", "parleyd": NAME}
  {"event": "remembered", "values": {...}}
  {"event": "declared", "items": [...]}
  {"event": "set", "item": ..., "value": ...}                      a Set the app accepted
  {"event": "refused", "item": ..., "value": ..., "reason": ...}   a Set or Invoke the app refused itself
  {"event": "invoked", "item": ..., "message": ...}
  {"event": "changed", "item": ..., "value": ...}                  a change the app made itself (sent as Changed)
  {"event": "closed", "reason": ...}                               parleyd closed the connection; the app exits

It exits on SIGTERM or SIGINT (closing with going-away) and when parleyd closes the connection.
"""
import argparse
import json
import math
import platform
import signal
import socket
import struct
import sys
import threading
import time
import uuid

# docs/protocol.md §2, §3: frame start byte and kinds; little-endian throughout.
START = 0xCF
HELLO, MESSAGE, ERROR_REPLY, PING, PONG, CLOSE = 0x01, 0x10, 0x11, 0x20, 0x21, 0x30
EXPECTS_REPLY = 0x01
GOING_AWAY, HANDLER_FAILED, UNKNOWN_TYPE, UNDECODABLE_PAYLOAD = 0, 8, 5, 6

SET, INVOKE, RESULT = "parley.drawer.Set", "parley.drawer.Invoke", "parley.drawer.Result"
DECLARE, CHANGED = "parley.drawer.Declare", "parley.drawer.Changed"
REMEMBERED, VALUES = "parley.drawer.Remembered", "parley.drawer.Values"

DEFAULT_MAX_LENGTH = 4096


def emit(event, **fields):
    line = {"event": event, **fields, "time": time.time()}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def default_items():
    return [
        {"id": "network.slow", "label": "Simulate a slow network", "kind": "toggle", "value": False, "remember": True,
         "section": "Network"},
        {"id": "latency", "label": "Added latency (ms)", "kind": "number", "value": 0, "min": 0, "max": 5000, "step": 100,
         "section": "Network"},
        {"id": "theme", "label": "Theme", "kind": "choice", "value": "light",
         "options": [{"id": "light", "label": "Light"}, {"id": "dark", "label": "Dark"}], "section": "Appearance"},
        {"id": "greeting", "label": "Greeting", "kind": "text", "value": "Hello", "maxLength": 64, "section": "Appearance"},
        {"id": "reset", "label": "Reset all settings", "kind": "action", "destructive": True},
        {"id": "build", "label": "Build", "kind": "info",
         "value": f"drawer_app.py 1 (Python {platform.python_version()})"},
    ]


class Refused(Exception):
    """The app will not take this value or invocation; the text is its reason."""


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check(item, value):
    """The app's own check of a value set from outside (docs/drawer.md, Items); answers the value to apply."""
    kind = item["kind"]
    if kind in ("action", "info"):
        raise Refused(f"{item['id']} cannot be set (it is an {kind})")
    if kind == "toggle":
        if not isinstance(value, bool):
            raise Refused(f"{item['id']} takes true or false")
    elif kind == "choice":
        options = [option["id"] for option in item["options"]]
        if not isinstance(value, str) or value not in options:
            raise Refused(f"{item['id']} takes one of {', '.join(options)}")
    elif kind == "text":
        if not isinstance(value, str):
            raise Refused(f"{item['id']} takes a string")
        if len(value) > item.get("maxLength", DEFAULT_MAX_LENGTH):
            raise Refused(f"{item['id']} takes at most {item.get('maxLength', DEFAULT_MAX_LENGTH)} characters")
    elif kind == "number":
        if not is_number(value):
            raise Refused(f"{item['id']} takes a number")
        low, high, step = item.get("min"), item.get("max"), item.get("step")
        if (low is not None and value < low) or (high is not None and value > high):
            raise Refused(f"{value} is outside {low}…{high}")
        if step:
            steps = (value - (low or 0)) / step
            if abs(steps - round(steps)) > 1e-6:
                raise Refused(f"{value} is not a multiple of {step} from {low or 0}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
    return value


def parse_value(text):
    """JSON, or bare text (for texts and choices), as parleyctl set takes it."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class DrawerApp:
    def __init__(self, host, port, name, heartbeat, refuse):
        self.name = name
        self.heartbeat = heartbeat
        self.refuse = set(refuse)
        self.items = default_items()
        self.defaults = {item["id"]: item.get("value") for item in self.items}
        self.lock = threading.Lock()  # one writer at a time, and the items
        self.next_id = 1
        self.pending = {}  # our request id -> (Event, [answer frame])
        self.stopped = threading.Event()
        self.buffer = b""
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)

    # Frames (docs/protocol.md §2, §3)

    def send_body(self, body):
        with self.lock:
            self.sock.sendall(bytes([START]) + struct.pack("<I", len(body)) + body)

    def new_id(self):
        with self.lock:
            value = self.next_id
            self.next_id += 1
            return value

    def send_message(self, type_name, payload, *, request=False, in_reply_to=0):
        message_id = self.new_id()
        name = type_name.encode()
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_body(struct.pack("<BBQQH", MESSAGE, EXPECTS_REPLY if request else 0, message_id, in_reply_to, len(name)) + name + data)
        return message_id

    def send_error(self, in_reply_to, code, text):
        self.send_body(struct.pack("<BQH", ERROR_REPLY, in_reply_to, code) + text.encode())

    def read_exactly(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("parleyd closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def read_frame(self):
        start, length = struct.unpack("<BI", self.read_exactly(5))
        if start != START:
            raise EOFError(f"unexpected start byte {start:#04x}")
        if length == 0:
            raise EOFError("an empty frame")
        body = self.read_exactly(length)
        return body[0], body[1:]

    # The connection

    def handshake(self):
        hello = {"peerID": str(uuid.uuid4()), "name": self.name, "capabilities": ["heartbeat"] if self.heartbeat else [],
                 "accepts": [SET, INVOKE, RESULT, VALUES]}
        self.send_body(struct.pack("<BHH", HELLO, 1, 1) + json.dumps(hello, separators=(",", ":")).encode())
        kind, rest = self.read_frame()
        if kind == CLOSE:
            code = struct.unpack("<H", rest[:2])[0]
            raise SystemExit(f"drawer_app: parleyd refused the connection: code {code}: {rest[2:].decode('utf-8', 'replace')}")
        if kind != HELLO:
            raise SystemExit(f"drawer_app: expected a hello, got frame kind {kind:#04x}")
        emit("connected", parleyd=json.loads(rest[4:]).get("name"))

    def request(self, type_name, payload, timeout=10):
        """Sends a request; answers (kind, type name, payload) of its answer. The reader thread must run."""
        done, answer = threading.Event(), []
        message_id = self.new_id()
        with self.lock:
            self.pending[message_id] = (done, answer)
        name = type_name.encode()
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_body(struct.pack("<BBQQH", MESSAGE, EXPECTS_REPLY, message_id, 0, len(name)) + name + data)
        if not done.wait(timeout):
            raise SystemExit(f"drawer_app: no answer to {type_name} within {timeout} s")
        return answer[0]

    def reader(self):
        reason = "end of stream"
        try:
            while True:
                kind, rest = self.read_frame()
                if kind == PING:
                    self.send_body(bytes([PONG]) + rest[:8])
                elif kind == CLOSE:
                    code = struct.unpack("<H", rest[:2])[0]
                    reason = f"close code {code}: {rest[2:].decode('utf-8', 'replace')}"
                    break
                elif kind == ERROR_REPLY:
                    in_reply_to, code = struct.unpack("<QH", rest[:10])
                    self.answered(in_reply_to, ("error", code, rest[10:].decode("utf-8", "replace")))
                elif kind == MESSAGE:
                    flags, message_id, in_reply_to, name_length = struct.unpack("<BQQH", rest[:19])
                    type_name = rest[19:19 + name_length].decode("utf-8", "replace")
                    payload = rest[19 + name_length:]
                    if in_reply_to:
                        self.answered(in_reply_to, ("message", type_name, payload))
                    else:
                        self.handle(type_name, payload, message_id if flags & EXPECTS_REPLY else 0)
        except (EOFError, OSError) as error:
            if not self.stopped.is_set():
                reason = str(error)
        if not self.stopped.is_set():
            emit("closed", reason=reason)
        self.stopped.set()
        with self.lock:
            for done, _ in self.pending.values():
                done.set()

    def answered(self, in_reply_to, answer):
        with self.lock:
            waiting = self.pending.pop(in_reply_to, None)
        if waiting:
            waiting[1].append(answer)
            waiting[0].set()

    # The drawer

    def item(self, item_id):
        return next((item for item in self.items if item["id"] == item_id), None)

    def declare(self):
        with self.lock:
            items = json.loads(json.dumps(self.items))
        self.send_message(DECLARE, {"items": items})
        emit("declared", items=items)

    def handle(self, type_name, payload, request_id):
        try:
            body = json.loads(payload)
        except ValueError:
            if request_id:
                self.send_error(request_id, UNDECODABLE_PAYLOAD, "the payload is not JSON")
            return
        if type_name == SET:
            self.handle_set(body, request_id)
        elif type_name == INVOKE:
            self.handle_invoke(body, request_id)
        elif request_id:
            self.send_error(request_id, UNKNOWN_TYPE, f'no handler for message type "{type_name}"')

    def handle_set(self, body, request_id):
        item_id, value = body.get("item"), body.get("value")
        try:
            item = self.item(item_id)
            if item is None:
                raise Refused(f"there is no item {item_id!r}")
            if item_id in self.refuse:
                raise Refused(f"{item_id} cannot be changed right now")
            value = check(item, value)
        except Refused as reason:
            emit("refused", item=item_id, value=value, reason=str(reason))
            if request_id:
                self.send_error(request_id, HANDLER_FAILED, str(reason))
            return
        with self.lock:
            item["value"] = value
        emit("set", item=item_id, value=value)
        if request_id:
            self.send_message(RESULT, {"value": value}, in_reply_to=request_id)

    def handle_invoke(self, body, request_id):
        item_id = body.get("item")
        item = self.item(item_id)
        if item is None or item["kind"] != "action" or item_id in self.refuse:
            reason = f"{item_id} cannot be run right now" if item_id in self.refuse else f"{item_id!r} is not an action"
            emit("refused", item=item_id, reason=reason)
            if request_id:
                self.send_error(request_id, HANDLER_FAILED, reason)
            return
        changed = []
        with self.lock:
            for entry in self.items:
                if entry["kind"] not in ("action", "info") and entry["value"] != self.defaults[entry["id"]]:
                    entry["value"] = self.defaults[entry["id"]]
                    changed.append((entry["id"], entry["value"]))
        message = f"{len(changed)} setting{'s' if len(changed) != 1 else ''} reset"
        emit("invoked", item=item_id, message=message)
        if request_id:
            self.send_message(RESULT, {"message": message}, in_reply_to=request_id)
        for changed_id, value in changed:
            self.send_message(CHANGED, {"item": changed_id, "value": value})
            emit("changed", item=changed_id, value=value)

    def change(self, item_id, value):
        """A change the app makes itself: applied, then told to parleyd."""
        item = self.item(item_id)
        if item is None:
            emit("refused", item=item_id, value=value, reason="no such item")
            return
        with self.lock:
            item["value"] = value
        self.send_message(CHANGED, {"item": item_id, "value": value})
        emit("changed", item=item_id, value=value)

    def close(self):
        if self.stopped.is_set():
            return
        self.stopped.set()
        try:
            self.send_body(struct.pack("<BH", CLOSE, GOING_AWAY) + b"drawer app stopping")
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description="An app with a debug drawer, for Parley's tests.")
    parser.add_argument("--connect", nargs=2, required=True, metavar=("HOST", "PORT"))
    parser.add_argument("--name", default="drawer-app")
    parser.add_argument("--no-heartbeat", action="store_true", help="do not list the heartbeat capability")
    parser.add_argument("--change-after", nargs=2, action="append", default=[], metavar=("SECONDS", "ITEM=VALUE"))
    parser.add_argument("--refuse", action="append", default=[], metavar="ITEM", help="refuse every Set or Invoke of ITEM")
    arguments = parser.parse_args()

    changes = []
    for seconds, assignment in arguments.change_after:
        item_id, separator, text = assignment.partition("=")
        if not separator:
            parser.error(f"--change-after takes ITEM=VALUE, not {assignment!r}")
        changes.append((float(seconds), item_id, parse_value(text)))
    changes.sort(key=lambda change: change[0])

    app = DrawerApp(arguments.connect[0], int(arguments.connect[1]), arguments.name, not arguments.no_heartbeat, arguments.refuse)
    stop = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())

    app.handshake()
    reader = threading.Thread(target=app.reader, daemon=True)
    reader.start()
    threading.Thread(target=lambda: (app.stopped.wait(), stop.set()), daemon=True).start()

    answer = app.request(REMEMBERED, {})
    remembered = {}
    if answer[0] == "message" and answer[1] == VALUES:
        remembered = json.loads(answer[2]).get("values", {})
    emit("remembered", values=remembered)
    for item_id, value in remembered.items():
        item = app.item(item_id)
        if item is not None and item.get("remember"):
            try:
                item["value"] = check(item, value)
            except Refused:
                pass
    app.declare()

    declared = time.monotonic()
    for seconds, item_id, value in changes:
        if stop.wait(max(0.0, declared + seconds - time.monotonic())):
            break
        app.change(item_id, value)
    # Signals are handled by the main thread between waits: wait in short steps.
    while not stop.wait(0.2):
        pass
    app.close()
    # Read until parleyd closes (the reader thread sees the end), at most 2 s (docs/protocol.md §8).
    reader.join(2)
    try:
        app.sock.close()
    except OSError:
        pass


if __name__ == "__main__":
    main()
