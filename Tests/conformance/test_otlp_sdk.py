"""parleyd's OTLP/HTTP receiver against a client no one here wrote: the official OpenTelemetry Python SDK, with
nothing configured but the endpoint (docs/observability.md, "From any language"). What it sent is read back
through the web API and parleyctl."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import Daemon, PARLEYD

PARLEYCTL = PARLEYD.parent / "parleyctl"
APP = Path(__file__).parent / "otlp_app.py"


@pytest.fixture(scope="module")
def exported():
    """A parleyd, and the trace id the SDK's app exported to it."""
    daemon = Daemon("--web-listen", "127.0.0.1:0")
    if daemon.otlp is None:
        pytest.fail("parleyd's readiness line names no OTLP endpoint")
    environment = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=daemon.otlp, OTEL_SERVICE_NAME="py-shop")
    result = subprocess.run([sys.executable, str(APP)], capture_output=True, text=True, timeout=60, env=environment)
    assert result.returncode == 0, result.stderr
    yield daemon, result.stdout.strip()
    daemon.stop()


def ctl(daemon: Daemon, *arguments: str) -> str:
    result = subprocess.run([str(PARLEYCTL), *arguments, "--socket", daemon.control_socket], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_session_of_kind_otlp_named_by_the_service(exported):
    daemon, _ = exported
    with urllib.request.urlopen(daemon.web + "/api/sessions") as response:
        sessions = json.load(response)["sessions"]
    assert [(s["kind"], s["appName"]) for s in sessions] == [("otlp", "py-shop")]
    assert sessions[0]["spanCount"] == 3
    assert sessions[0]["logCount"] == 3  # info, warning, error; the debug line is below the handler's level
    assert sessions[0]["resource"]["telemetry.sdk.language"] == "python"


def test_the_trace_of_nested_spans(exported):
    daemon, trace_id = exported
    text = ctl(daemon, "trace", trace_id)
    lines = [line for line in text.splitlines() if line.strip()]
    names = ["POST /checkout", "reserve stock", "SELECT stock"]
    positions = [next(i for i, line in enumerate(lines) if name in line) for name in names]
    assert positions == sorted(positions)
    indents = [len(lines[i]) - len(lines[i].lstrip()) for i in positions]
    assert indents[0] < indents[1] < indents[2], text
    assert "deadlock detected" in text or "error" in lines[positions[2]]


def test_log_records_with_levels_and_their_trace(exported):
    daemon, trace_id = exported
    # Each line a stored record: its id, its session, and the record as the protocol writes it.
    records = [json.loads(line)["record"] for line in ctl(daemon, "logs", "py-shop", "--json").splitlines() if line.strip()]
    messages = [record["message"] for record in records]
    assert messages == ["checkout started for cart-42", "retrying after a deadlock \x1b[31mred\x1b[0m", "payment declined"]
    assert [record["severity"] for record in records] == ["info", "warning", "error"]
    assert all(record["label"] == "shop.checkout" for record in records)
    assert records[0]["traceId"] == trace_id
    plain = ctl(daemon, "logs", "py-shop")
    assert "\x1b" not in plain, "remote escape sequences reached the terminal raw"


def test_the_trace_in_the_list_of_traces(exported):
    daemon, trace_id = exported
    lines = [line for line in ctl(daemon, "traces").splitlines() if trace_id[:8] in line]
    assert len(lines) == 1, ctl(daemon, "traces")
    assert "POST /checkout" in lines[0]
    summaries = [json.loads(line) for line in ctl(daemon, "traces", "--json").splitlines() if line.strip()]
    summary = next(s for s in summaries if s["traceID"] == trace_id)
    assert summary["spanCount"] == 3 and summary["errorCount"] == 1 and summary["name"] == "POST /checkout"


def test_the_spans_in_full_through_parleyctl_and_the_web_api(exported):
    daemon, trace_id = exported
    verbose = ctl(daemon, "trace", trace_id, "-v")
    assert "db.system" in verbose and "postgresql" in verbose and "http.request.method" in verbose
    with urllib.request.urlopen(f"{daemon.web}/api/traces/{trace_id}") as response:
        spans = {entry["span"]["name"]: entry["span"] for entry in json.load(response)["spans"]}
    root, reserve, query = spans["POST /checkout"], spans["reserve stock"], spans["SELECT stock"]
    assert root.get("parentSpanId") is None, root
    assert reserve["parentSpanId"] == root["spanId"] and query["parentSpanId"] == reserve["spanId"]
    assert (root["kind"], reserve["kind"], query["kind"]) == ("server", "internal", "client")
    assert query["status"] == {"code": "error", "message": "deadlock detected"}
    assert query["attributes"]["db.system"] == "postgresql"
    assert query["attributes"]["otel.scope.name"] == "shop"
    assert int(root["startTimeUnixNano"]) <= int(reserve["startTimeUnixNano"]) <= int(query["startTimeUnixNano"])
    assert int(query["endTimeUnixNano"]) <= int(reserve["endTimeUnixNano"]) <= int(root["endTimeUnixNano"])


def test_log_records_filtered_by_level_and_on_the_session_timeline(exported):
    daemon, trace_id = exported
    warnings = [json.loads(line)["record"]["message"] for line in ctl(daemon, "logs", "py-shop", "--level", "warning", "--json").splitlines() if line.strip()]
    assert warnings == ["retrying after a deadlock \x1b[31mred\x1b[0m", "payment declined"]
    assert "payment declined" in ctl(daemon, "logs", "py-shop", "--grep", "declined")
    with urllib.request.urlopen(daemon.web + "/api/sessions") as response:
        session = json.load(response)["sessions"][0]
    with urllib.request.urlopen(f"{daemon.web}/api/sessions/{session['id']}/timeline?limit=100") as response:
        timeline = json.load(response)
    kinds = sorted(item["kind"] for item in timeline["items"])
    assert kinds == ["log", "log", "log", "span", "span", "span"], timeline
    times = [int(item["time"]) for item in timeline["items"]]
    assert times == sorted(times)
