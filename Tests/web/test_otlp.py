"""An app instrumented with the official OpenTelemetry Python SDK alone (Tests/conformance/otlp_app.py: a trace of
three nested spans and three log lines through the logging bridge), exported to parleyd's OTLP receiver with
nothing configured but the endpoint, and seen in headless Chromium: its session's timeline and its trace's waterfall.
Screenshots: otlp_timeline.png, otlp_trace.png."""
import os
import subprocess
import sys

import pytest
from selenium.webdriver.common.by import By

from parley_tools.browser import ARTIFACTS, REPOSITORY, Parleyd, wait_until
from test_web import css, wait, wait_css

APP = REPOSITORY / "Tests" / "conformance" / "otlp_app.py"


@pytest.fixture
def parleyd():
    """parleyd with its OTLP receiver on a free port (not OTLP's 4318, which only one parleyd could have)."""
    daemon = Parleyd(environment={"PARLEY_OTLP_LISTEN": "127.0.0.1:0"})
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def exported(parleyd):
    """The py-shop session and the trace id the SDK's app exported."""
    if parleyd.otlp is None:
        pytest.fail("parleyd's readiness line names no OTLP endpoint")
    environment = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=parleyd.otlp, OTEL_SERVICE_NAME="py-shop")
    result = subprocess.run([sys.executable, str(APP)], capture_output=True, text=True, timeout=60, env=environment)
    assert result.returncode == 0, result.stderr
    trace = result.stdout.strip()

    def complete():
        sessions = parleyd.get("/api/sessions")["sessions"]
        return sessions[0] if sessions and sessions[0]["spanCount"] == 3 and sessions[0]["logCount"] == 3 else None

    return wait_until(parleyd, complete, "the SDK's three spans and three log records"), trace


def shot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def row_text(row):
    return row.find_element(By.CSS_SELECTOR, ".c-name, .c-text").text


def test_the_sdk_session_on_its_timeline(parleyd, exported, browser):
    session, _ = exported
    assert (session["kind"], session["appName"]) == ("otlp", "py-shop")
    browser.get(f"{parleyd.web}/sessions/{session['id']}")
    rows = wait(browser, lambda d: (lambda r: r if len(r) == 6 else None)(css(d, ".tl-row[data-key]")),
                message="the timeline does not show the six records")
    texts = [row_text(row) for row in rows]
    assert set(texts[:4]) >= {"POST /checkout", "checkout started for cart-42"}, texts
    # Spans sit at their start: the root, then the log line written inside it, the child and the grandchild.
    order = [next(i for i, text in enumerate(texts) if text.startswith(name))
             for name in ["POST /checkout", "checkout started", "reserve stock", "SELECT stock", "retrying after a deadlock", "payment declined"]]
    assert order == sorted(order), texts
    kinds = [row.get_attribute("data-key").split(":")[0] for row in rows]
    assert sorted(kinds) == ["log", "log", "log", "span", "span", "span"]
    levels = {row_text(row): row.find_element(By.CSS_SELECTOR, ".c-level").text for row in rows if "kind-log" in row.get_attribute("class")}
    assert sorted(levels.values()) == ["ERR", "INF", "WRN"], levels
    assert wait_css(browser, ".session-head .span-count").text == "3"
    assert wait_css(browser, ".session-head .log-count").text == "3"
    # A service that records no states shows neither a count of them nor the controls that select them.
    terms = [term.text for term in css(browser, ".session-head dt")]
    assert "entries" not in terms and terms[-2:] == ["logs", "spans"], terms
    assert not wait_css(browser, ".tl-kind.kind-state").is_displayed()
    assert not wait_css(browser, ".tl-named").is_displayed() and not wait_css(browser, ".tl-mode").is_displayed()
    assert wait_css(browser, ".tl-kind.kind-log").is_displayed()
    # The escape sequence the app put in a log line is shown as text, not obeyed and not dropped.
    warning = next(row for row in rows if row_text(row).startswith("retrying"))
    assert "red" in row_text(warning)
    shot(browser, "otlp_timeline")


def test_the_sdk_trace_as_a_waterfall(parleyd, exported, browser):
    session, trace = exported
    browser.get(f"{parleyd.web}/sessions/{session['id']}")
    root = wait(browser, lambda d: next((row for row in css(d, ".tl-row.kind-span") if row_text(row) == "POST /checkout"), None),
                message="the root span is not on the timeline")
    root.click()
    wait_css(browser, ".item-pane a[href^='/traces/']").click()
    wait(browser, lambda d: f"/traces/{trace}" in d.current_url)
    rows = wait(browser, lambda d: (lambda r: r if len(r) == 3 else None)(css(d, ".wf-row")), message="the waterfall has not three rows")
    assert [row.find_element(By.CSS_SELECTOR, ".wf-label").text for row in rows] == ["POST /checkout", "reserve stock", "SELECT stock"]
    assert [row.get_attribute("data-depth") for row in rows] == ["0", "1", "2"]
    assert "status-error" in rows[2].get_attribute("class")
    bars = [browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.right]", row.find_element(By.CSS_SELECTOR, ".wf-bar"))
            for row in rows]
    assert bars[0][0] <= bars[1][0] <= bars[2][0] and bars[2][1] <= bars[1][1] <= bars[0][1] + 1, bars
    rows[2].click()
    detail = wait(browser, lambda d: (lambda e: e if "SELECT stock" in e.text else None)(wait_css(d, ".trace-detail .item-detail")))
    assert "deadlock detected" in detail.text and "postgresql" in detail.text
    shot(browser, "otlp_trace")
