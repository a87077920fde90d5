"""An app in the typed protocol that records states (parley.debugger.record, docs/debugger.md) and sends its log
records and spans (parley.telemetry.Batch, docs/protocol.md), written from those documents: what the browser tests
and the web benchmark seed a session with. Times are nanoseconds since 1970, as the batch carries them."""
from __future__ import annotations

import json
import os
import struct

from parley_tools import wire

RECORD = "parley.debugger.record"
RESTORE = "parley.debugger.restore"
BATCH = "parley.telemetry.Batch"


def record_payload(action: str, state: bytes, screenshot: bytes = b"") -> bytes:
    """parley.debugger.record's binary payload: the action and the state, each after its UInt32 LE length, then
    the PNG (or nothing)."""
    a = action.encode()
    return struct.pack("<I", len(a)) + a + struct.pack("<I", len(state)) + state + screenshot


def log(time_ns: int, severity: str, message: str, label: str = "", **fields) -> dict:
    """A LogRecord: timeUnixNano, severity, message, label, and any of metadata, source, file, function, line, traceId,
    spanId."""
    return {"timeUnixNano": str(time_ns), "severity": severity, "message": message, "label": label, **fields}


def span(trace_id: str, span_id: str, name: str, start_ns: int, end_ns: int, parent: str | None = None, kind: str = "internal",
         status: dict | None = None, attributes: dict | None = None, events: list | None = None, links: list | None = None) -> dict:
    """A SpanRecord, as OpenTelemetry shapes a span."""
    record = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": kind,
              "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(end_ns)}
    if parent:
        record["parentSpanId"] = parent
    if status:
        record["status"] = status
    if attributes:
        record["attributes"] = attributes
    if events:
        record["events"] = events
    if links:
        record["links"] = links
    return record


def event(name: str, time_ns: int, attributes: dict | None = None) -> dict:
    return {"name": name, "timeUnixNano": str(time_ns), "attributes": attributes or {}}


def trace_id() -> str:
    return os.urandom(16).hex()


def span_id() -> str:
    return os.urandom(8).hex()


class TelemetryApp:
    """Dials parleyd's port as an app named `name` that takes restores (so parleyd records its states in a session)."""

    def __init__(self, port: int, name: str = "Timeline Demo"):
        self.name = name
        self.conn = wire.dial(port, name=name, accepts=[RESTORE])

    def record(self, action: str, state, screenshot: bytes = b"") -> None:
        """state: bytes as they are, or a value to encode as JSON."""
        state_bytes = state if isinstance(state, bytes) else json.dumps(state, separators=(",", ":")).encode()
        self.conn.send_message(RECORD, record_payload(action, state_bytes, screenshot))

    def batch(self, logs=(), spans=()) -> None:
        body = {}
        if logs:
            body["logs"] = list(logs)
        if spans:
            body["spans"] = list(spans)
        self.conn.send_message(BATCH, json.dumps(body, separators=(",", ":")).encode())

    def close(self) -> None:
        try:
            self.conn.send_close()
        except OSError:
            pass
        self.conn.close()
