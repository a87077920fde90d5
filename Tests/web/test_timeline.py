"""The timeline of states, log lines and spans, and the trace view, in headless Chromium against a real parleyd: an
app in the typed protocol records states and sends parley.telemetry.Batch messages between them. Screenshots of each
view go to the artifacts folder (timeline_*.png)."""
import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from parley_tools.browser import ARTIFACTS, app_screenshot, request_mark, requests_since, wait_until
from parley_tools.telemetry_app import TelemetryApp, event, log, span, span_id, trace_id
from test_phone import PHONE, assert_no_sideways_scroll  # noqa: F401
from test_web import HOSTILE, css, wait, wait_css

US = 1_000
MS = 1_000_000


def shot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"timeline_{name}.png"))


def iso_nanos(iso):
    """An ISO 8601 time with milliseconds (as the API writes states' times) in nanoseconds, computed in integers."""
    from datetime import datetime
    moment = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")
    seconds = int((moment - datetime(1970, 1, 1)).total_seconds())
    return seconds * 1_000_000_000 + moment.microsecond * 1_000


def timeline(parleyd, session_id, query=""):
    return parleyd.get(f"/api/sessions/{session_id}/timeline?limit=1000{query}")


def wait_for_items(parleyd, session_id, count):
    return wait_until(parleyd, lambda: (lambda t: t if t["total"] >= count else None)(timeline(parleyd, session_id)), f"{count} timeline items")


def key(item):
    return f'{item["kind"]}:{item["item"]["sequence"] if item["kind"] == "state" else item["item"]["id"]}'


class Seeded:
    """A session of two states, nine log lines and one trace of three spans:

        L0 info      app.lifecycle  starting up            5 ms before state A
        A  load                                            (parleyd's time, T1)
        L1 debug     app.net        GET /items sent        T1 + 100 µs
        S  GET /items (client, ok)                         T1 + 200 µs … 700 µs, root of trace
          Q  db.query (error: timeout, event retry)        T1 + 300 µs … 600 µs
          D  decode                                        T1 + 610 µs … 690 µs
        L2 warning   app.store      slow write             T1 + 800 µs
        B  add("milk")                                     (parleyd's time, T2)
        L3 error     app.net        request failed: timeout   T2 + 1 ms
        L4 critical  app            out of memory            T2 + 2 ms
        L5 notice    app.ui         list shown               T2 + 3 ms
        L6 trace     app.ui         frame                    T2 + 4 ms
    """

    def __init__(self, parleyd):
        self.app = TelemetryApp(parleyd.port)
        self.app.record("load", {"items": []}, app_screenshot([]))
        self.session = wait_until(parleyd, lambda: (parleyd.get("/api/sessions?limit=1")["sessions"] or [None])[0], "the session")
        self.id = self.session["id"]
        first = wait_for_items(parleyd, self.id, 1)["items"][0]
        t1 = iso_nanos(first["item"]["time"])
        self.trace = trace_id()
        root, query, decode = span_id(), span_id(), span_id()
        self.app.batch(
            logs=[
                log(t1 - 5 * MS, "info", "starting up", "app.lifecycle"),
                log(t1 + 100 * US, "debug", "GET /items sent", "app.net", traceId=self.trace, spanId=root),
                log(t1 + 800 * US, "warning", "slow write", "app.store", metadata={"ms": 812, "table": "items"}, file="Store.swift", line=42),
            ],
            spans=[
                span(self.trace, root, "GET /items", t1 + 200 * US, t1 + 700 * US, kind="client", status={"code": "ok"},
                     attributes={"http.method": "GET", "http.url": "http://127.0.0.1/items", "http.status_code": 200}),
                span(self.trace, query, "db.query", t1 + 300 * US, t1 + 600 * US, parent=root, status={"code": "error", "message": "timeout"},
                     events=[event("retry", t1 + 400 * US, {"attempt": 2})]),
                span(self.trace, decode, "decode", t1 + 610 * US, t1 + 690 * US, parent=root),
            ],
        )
        wait_for_items(parleyd, self.id, 7)
        self.app.record('add("milk")', {"items": ["milk"]}, app_screenshot(["milk"]))
        items = wait_for_items(parleyd, self.id, 8)["items"]
        t2 = iso_nanos(next(item for item in items if item["kind"] == "state" and item["item"]["action"] == 'add("milk")')["item"]["time"])
        assert t2 > t1 + 800 * US, "state B was recorded after the first batch's records"
        self.app.batch(logs=[
            log(t2 + 1 * MS, "error", "request failed: timeout", "app.net"),
            log(t2 + 2 * MS, "critical", "out of memory", "app"),
            log(t2 + 3 * MS, "notice", "list shown", "app.ui"),
            log(t2 + 4 * MS, "trace", "frame", "app.ui"),
        ])
        self.items = wait_for_items(parleyd, self.id, 12)["items"]
        by_text = {}
        for item in self.items:
            fields = item["item"]
            text = fields["action"] if item["kind"] == "state" else fields["record"]["message"] if item["kind"] == "log" else fields["span"]["name"]
            by_text[text] = item
        self.by_text = by_text

    def row_key(self, text):
        return key(self.by_text[text])

    def id_of(self, text):
        item = self.by_text[text]
        return item["item"]["sequence"] if item["kind"] == "state" else item["item"]["id"]

    def close(self):
        self.app.close()


@pytest.fixture
def seeded(parleyd):
    session = Seeded(parleyd)
    try:
        yield session
    finally:
        session.close()


def shown_keys(driver):
    return [row.get_attribute("data-key") for row in css(driver, ".tl-row[data-key]")]


def open_session(driver, parleyd, seeded, suffix=""):
    driver.get(f"{parleyd.web}/sessions/{seeded.id}{suffix}")
    wait_css(driver, ".tl-row[data-key]")


def color(driver, selector, prop="color"):
    return driver.execute_script(f"return getComputedStyle(document.querySelector(arguments[0])).{prop}", selector)


def test_states_log_lines_and_spans_are_one_timeline_in_time_order(parleyd, seeded, browser):
    open_session(browser, parleyd, seeded)
    expected = [seeded.row_key(text) for text in [
        "starting up", "load", "GET /items sent", "GET /items", "db.query", "decode", "slow write", 'add("milk")',
        "request failed: timeout", "out of memory", "list shown", "frame"]]
    wait(browser, lambda d: shown_keys(d) == expected, message=f"the rows are not in time order: {shown_keys(browser)}")
    assert shown_keys(browser) == [key(item) for item in seeded.items], "the page shows parleyd's order"
    assert "12 entries" in wait_css(browser, ".tl-count").text
    assert wait_css(browser, ".session-head .log-count").text == "7"
    assert wait_css(browser, ".session-head .span-count").text == "3"

    # Each kind at a glance: a state its number; a log line its level in three letters and the level's colour; a span
    # a bar as long (on a log scale) as it took, and its duration.
    assert wait_css(browser, f'.tl-row[data-key="{seeded.row_key("load")}"] .c-seq').text == str(seeded.id_of("load"))
    levels = {text: wait_css(browser, f'.tl-row[data-key="{seeded.row_key(text)}"] .c-level').text
              for text in ["GET /items sent", "starting up", "list shown", "slow write", "request failed: timeout", "out of memory", "frame"]}
    assert levels == {"GET /items sent": "DBG", "starting up": "INF", "list shown": "NTC", "slow write": "WRN",
                      "request failed: timeout": "ERR", "out of memory": "CRT", "frame": "TRC"}, levels
    colours = {text: color(browser, f'.tl-row[data-key="{seeded.row_key(text)}"] .c-level') for text in levels}
    assert len(set(colours[t] for t in ["GET /items sent", "starting up", "list shown", "slow write", "request failed: timeout", "frame"])) == 6, colours
    assert colours["slow write"] == "rgb(191, 106, 2)" and colours["request failed: timeout"] == "rgb(207, 34, 46)", colours
    assert color(browser, f'.tl-row[data-key="{seeded.row_key("out of memory")}"] .c-level', "backgroundColor") == "rgb(164, 14, 38)"
    assert color(browser, f'.tl-row[data-key="{seeded.row_key("request failed: timeout")}"]', "backgroundColor") != \
        color(browser, f'.tl-row[data-key="{seeded.row_key("list shown")}"]', "backgroundColor"), "an error's row is tinted"
    widths = {text: browser.execute_script(
        "return document.querySelector(arguments[0]).getBoundingClientRect().width", f'.tl-row[data-key="{seeded.row_key(text)}"] .c-bar')
        for text in ["GET /items", "db.query", "decode"]}
    assert widths["GET /items"] > widths["db.query"] > widths["decode"] > 0, widths
    assert wait_css(browser, f'.tl-row[data-key="{seeded.row_key("GET /items")}"] .c-duration').text == "500 µs"
    assert wait_css(browser, f'.tl-row[data-key="{seeded.row_key("GET /items")}"] .c-kind').text == "SPAN"
    assert color(browser, f'.tl-row[data-key="{seeded.row_key("db.query")}"] .c-bar', "backgroundColor") == "rgb(207, 34, 46)", "a failed span's bar is red"
    shot(browser, "mixed")


def test_filters_by_kind_level_label_and_text_are_in_the_url(parleyd, seeded, browser):
    open_session(browser, parleyd, seeded)
    wait(browser, lambda d: len(shown_keys(d)) == 12)

    # Kinds: states off.
    wait_css(browser, '.tl-kind[data-kind="state"]').click()
    wait(browser, lambda d: len(shown_keys(d)) == 10 and not any(k.startswith("state:") for k in shown_keys(d)))
    wait(browser, lambda d: "kinds=log%2Cspan" in d.current_url or "kinds=log,span" in d.current_url)
    assert wait_css(browser, '.tl-kind[data-kind="state"]').get_attribute("aria-pressed") == "false"

    # Level: warning and above (spans are not affected by it).
    Select(wait_css(browser, ".tl-level")).select_by_value("warning")
    spans = [seeded.row_key(text) for text in ["GET /items", "db.query", "decode"]]
    warnings = [seeded.row_key(text) for text in ["slow write", "request failed: timeout", "out of memory"]]
    wait(browser, lambda d: shown_keys(d) == spans + warnings, message=f"level: {shown_keys(browser)}")
    assert "level=warning" in browser.current_url

    # Label glob: log labels and span names.
    label = wait_css(browser, ".tl-label")
    label.send_keys("app.net*\n")
    wait(browser, lambda d: shown_keys(d) == [seeded.row_key("request failed: timeout")], message=f"label: {shown_keys(browser)}")
    label.clear()
    label.send_keys("db.*\n")
    wait(browser, lambda d: shown_keys(d) == [seeded.row_key("db.query")], message=f"label on span names: {shown_keys(browser)}")
    label.clear()
    label.send_keys("\n")
    wait(browser, lambda d: shown_keys(d) == spans + warnings)

    # Text: parleyd's full-text search over messages.
    text = wait_css(browser, ".tl-text")
    text.send_keys("timeout\n")
    wait(browser, lambda d: shown_keys(d) == [seeded.row_key("request failed: timeout")], message=f"text: {shown_keys(browser)}")
    assert "1 match" in wait_css(browser, ".tl-count").text
    shot(browser, "filtered")

    # The URL holds the filter: opened as it is, the same rows and the same controls.
    url = browser.current_url
    assert "q=timeout" in url and "level=warning" in url
    browser.get("about:blank")
    browser.get(url)
    wait(browser, lambda d: shown_keys(d) == [seeded.row_key("request failed: timeout")])
    assert wait_css(browser, ".tl-text").get_attribute("value") == "timeout"
    assert Select(wait_css(browser, ".tl-level")).first_selected_option.get_attribute("value") == "warning"
    # An action glob lists states alone, and says so.
    browser.get(f"{parleyd.web}/sessions/{seeded.id}?pattern=add*")
    wait(browser, lambda d: shown_keys(d) == [seeded.row_key('add("milk")')])
    assert wait_css(browser, ".tl-note").is_displayed()
    assert not wait_css(browser, ".tl-level").is_enabled()


def test_a_log_line_and_a_span_arrive_live(parleyd, seeded, browser):
    open_session(browser, parleyd, seeded)
    wait(browser, lambda d: len(shown_keys(d)) == 12)
    browser.execute_script("window.__sameDocument = true")
    last = max(int(item["time"]) for item in seeded.items)
    watched = request_mark(browser)
    seeded.app.batch(logs=[log(last + 1 * MS, "error", "live and late", "app.live")])
    wait(browser, lambda d: any(cell.text == "live and late" for cell in css(d, ".tl-row .c-text")), message="the live log line did not appear")
    assert shown_keys(browser)[-1].startswith("log:"), "a line after the others is appended"
    assert not [path for path in requests_since(browser, watched) if "/timeline" in path], "the page fetched the timeline instead of taking the event"

    # A span is sent when it ends but sits at its start: it goes in its place among the rows, not at the end.
    # (State B was recorded a whole millisecond after state A at least, so after this span's start.)
    start = int(seeded.by_text["slow write"]["time"]) + 1 * US
    seeded.app.batch(spans=[span(trace_id(), span_id(), "late span", start, start + 5 * MS)])
    wait(browser, lambda d: any(cell.text == "late span" for cell in css(d, ".tl-row .c-name")), message="the live span did not appear")
    keys = shown_keys(browser)
    late = next(row.get_attribute("data-key") for row in css(browser, ".tl-row.kind-span") if row.text.find("late span") != -1)
    assert keys.index(late) == keys.index(seeded.row_key("slow write")) + 1, keys
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"
    wait(browser, lambda d: wait_css(d, ".session-head .log-count").text == "8")
    shot(browser, "live")


def test_a_click_on_a_log_line_or_span_shows_the_state_before_it(parleyd, seeded, browser):
    open_session(browser, parleyd, seeded)
    a, b = seeded.id_of("load"), seeded.id_of('add("milk")')

    wait_css(browser, f'.tl-row[data-key="{seeded.row_key("slow write")}"]').click()
    wait(browser, lambda d: d.current_url.endswith(f'/sessions/{seeded.id}/logs/{seeded.id_of("slow write")}'))
    detail = wait_css(browser, ".item-pane .item-detail")
    assert "slow write" in detail.find_element(By.CSS_SELECTOR, ".detail-message").text
    assert "Store.swift:42" in detail.text and "812" in detail.text
    context = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".state-context") if d.find_element(By.CSS_SELECTOR, ".state-context").is_displayed() else None)
    assert f"#{a}" in context.text and "newest state recorded before it" in context.text, context.text
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{a}")
    wait(browser, lambda d: "0 items" in wait_css(d, ".tree .trow[data-path='[\"items\"]']").text or "[]" in wait_css(d, ".tree .trow[data-path='[\"items\"]']").text)
    assert "state-shown" in wait_css(browser, f'.tl-row[data-key="state:{a}"]').get_attribute("class")
    shot(browser, "log_state")

    # After state B: B is shown.
    wait_css(browser, f'.tl-row[data-key="{seeded.row_key("request failed: timeout")}"]').click()
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{b}")
    wait(browser, lambda d: "1 item" in wait_css(d, ".tree .trow[data-path='[\"items\"]']").text)

    # A span: at its start; and its trace is a link away.
    wait_css(browser, f'.tl-row[data-key="{seeded.row_key("db.query")}"]').click()
    wait(browser, lambda d: d.current_url.endswith(f'/spans/{seeded.id_of("db.query")}'))
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{a}")
    span_detail = wait_css(browser, ".item-pane .item-detail.kind-span")
    assert "timeout" in span_detail.text and "retry" in span_detail.text and "+100 µs" in span_detail.text, span_detail.text

    # Before the first state: nothing to show, and it says so.
    wait_css(browser, f'.tl-row[data-key="{seeded.row_key("starting up")}"]').click()
    wait(browser, lambda d: "No state was recorded before" in wait_css(d, ".entry-head").text)

    # Keys move through log lines too; a direct link opens the same view.
    browser.get(f'{parleyd.web}/sessions/{seeded.id}/logs/{seeded.id_of("slow write")}')
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{a}")
    wait_css(browser, f'.tl-row.selected[data-key="{seeded.row_key("slow write")}"]')
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    wait(browser, lambda d: d.current_url.endswith(f"/entries/{b}"))


def test_the_trace_view_is_a_waterfall_with_the_span_in_full(parleyd, seeded, browser):
    open_session(browser, parleyd, seeded)
    wait_css(browser, f'.tl-row[data-key="{seeded.row_key("GET /items")}"]').click()
    wait_css(browser, ".item-pane a[href^='/traces/']").click()
    wait(browser, lambda d: f"/traces/{seeded.trace}" in d.current_url)
    rows = wait(browser, lambda d: (lambda r: r if len(r) == 3 else None)(css(d, ".wf-row")))
    assert [row.find_element(By.CSS_SELECTOR, ".wf-label").text for row in rows] == ["GET /items", "db.query", "decode"]
    assert [row.get_attribute("data-depth") for row in rows] == ["0", "1", "1"]
    indents = [browser.execute_script("return parseFloat(getComputedStyle(arguments[0]).paddingLeft)", row.find_element(By.CSS_SELECTOR, ".wf-name")) for row in rows]
    assert indents[0] < indents[1] == indents[2], indents
    bars = [browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.width]", row.find_element(By.CSS_SELECTOR, ".wf-bar")) for row in rows]
    (root_left, root_width), (query_left, query_width), (decode_left, decode_width) = bars
    assert abs(query_left - (root_left + root_width * 0.2)) < 2 and abs(query_width - root_width * 0.6) < 2, bars
    assert abs(decode_left - (root_left + root_width * 0.82)) < 2 and abs(decode_width - root_width * 0.16) < 2, bars
    assert "500 µs" in wait_css(browser, ".trace-head").text
    assert "selected" in rows[0].get_attribute("class"), "the span the link came from"

    rows[1].click()
    wait(browser, lambda d: d.current_url.endswith(f'?span={seeded.id_of("db.query")}'))
    detail = wait(browser, lambda d: (lambda e: e if "db.query" in e.text else None)(wait_css(d, ".trace-detail .item-detail")))
    assert "error" in detail.text and "timeout" in detail.text
    assert "retry" in detail.text and "attempt" in detail.text
    assert color(browser, ".wf-row.status-error .wf-bar", "backgroundColor") == "rgb(207, 34, 46)"
    shot(browser, "trace")
    # From the span to the app's state at its start.
    detail.find_element(By.PARTIAL_LINK_TEXT, "state when it started").click()
    wait(browser, lambda d: d.current_url.endswith(f'/sessions/{seeded.id}/spans/{seeded.id_of("db.query")}'))
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f'#{seeded.id_of("load")}')

    # The list of traces.
    browser.get(f"{parleyd.web}/traces?session={seeded.id}")
    row = wait_css(browser, f'.trace-row[data-trace="{seeded.trace}"]')
    assert "GET /items" in row.text and "500 µs" in row.text
    shot(browser, "traces")


def test_remote_text_in_logs_and_spans_is_shown_as_text(parleyd, seeded, browser):
    last = max(int(item["time"]) for item in seeded.items)
    trace = trace_id()
    seeded.app.batch(logs=[log(last + MS, "error", HOSTILE + "\nsecond line", HOSTILE, metadata={HOSTILE: HOSTILE})],
                     spans=[span(trace, span_id(), HOSTILE, last + 2 * MS, last + 3 * MS, attributes={HOSTILE: HOSTILE},
                                 status={"code": "error", "message": HOSTILE})])
    wait_for_items(parleyd, seeded.id, 14)
    open_session(browser, parleyd, seeded)
    cell = wait(browser, lambda d: next((c for c in css(d, ".tl-row .c-text") if HOSTILE in c.text), None))
    cell.find_element(By.XPATH, "ancestor::div[contains(@class, 'tl-row')]").click()
    detail = wait_css(browser, ".item-pane .item-detail")
    wait(browser, lambda d: HOSTILE in d.find_element(By.CSS_SELECTOR, ".item-pane .detail-message").text)
    assert HOSTILE in detail.find_element(By.CSS_SELECTOR, ".attr-key").text
    browser.get(f"{parleyd.web}/traces/{trace}")
    wait(browser, lambda d: HOSTILE in wait_css(d, ".wf-label").text)
    wait_css(browser, ".wf-row").click()
    wait(browser, lambda d: HOSTILE in wait_css(d, ".trace-detail .status-message").text)
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert browser.execute_script("return document.querySelectorAll('[onerror]').length") == 0


def test_on_a_phone_the_timeline_and_a_trace_fit(parleyd, seeded, browser):
    size = browser.get_window_size()
    browser.set_window_size(*PHONE)
    try:
        open_session(browser, parleyd, seeded)
        wait(browser, lambda d: len(shown_keys(d)) == 12)
        assert_no_sideways_scroll(browser, "a session's mixed timeline")
        wait_css(browser, f'.tl-row[data-key="{seeded.row_key("db.query")}"]').click()
        wait_css(browser, ".item-pane .item-detail")
        wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f'#{seeded.id_of("load")}')
        assert_no_sideways_scroll(browser, "a span beside its state")
        shot(browser, "phone_span")
        browser.get(f"{parleyd.web}/traces/{seeded.trace}")
        wait(browser, lambda d: len(css(d, ".wf-row")) == 3)
        css(browser, ".wf-row")[1].click()
        wait_css(browser, ".trace-detail .item-detail")
        assert_no_sideways_scroll(browser, "a trace")
        shot(browser, "phone_trace")
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_the_api_writes_nanoseconds_as_strings(parleyd, seeded):
    item = seeded.by_text["GET /items sent"]
    assert isinstance(item["time"], str) and item["item"]["record"]["timeUnixNano"] == item["time"]
    stored = parleyd.get(f'/api/logs/{item["item"]["id"]}')
    assert stored == item["item"]
    trace = parleyd.get(f"/api/traces/{seeded.trace}")
    assert [entry["span"]["name"] for entry in trace["spans"]] and all(isinstance(entry["span"]["startTimeUnixNano"], str) for entry in trace["spans"])
    state = parleyd.get(f'/api/sessions/{seeded.id}/state-at?time={item["time"]}')["entry"]
    assert state["sequence"] == seeded.id_of("load")
    assert json.dumps(parleyd.get(f'/api/sessions/{seeded.id}/state-at?time={int(seeded.by_text["starting up"]["time"])}')) == '{"entry": null}'
