#!/usr/bin/env python3
"""Browser timings of the web debugger (not a pass/fail test): records a 10 000-entry session and two 5 MB
states into a fresh parleyd, then measures in headless Chromium, with the page's own performance marks
(performance.mark / PerformanceObserver, read back through WebDriver):

  * time to the first painted page of the 10 000-entry timeline (from navigation start), and to a row in the
    middle after jumping there (a page fetched on demand);
  * time until a 5 MB state's tree is usable (from navigation start, and from the entry pane's start), the
    diff's arrival, moving to the next 5 MB entry with a key, and a search over the state;
  * a timeline of 100 000 mixed entries (a tenth states, the rest log lines and spans, from an app in the typed
    protocol): time to its first painted page, to the rows after a jump to the middle, and the frames while it
    scrolls row by row.

  python3 Tests/web/bench_web.py [--entries 10000] [--megabytes 5] [--mixed 100000] [--only-mixed] [--runs 3]
  (or scripts/web-tests --bench …)
"""
import argparse
import json
import statistics
import threading
import time
import urllib.request

from parley_tools.browser import OriginalApp, Parleyd, app_screenshot, start_browser, stop_browser
from parley_tools.telemetry_app import TelemetryApp, log, span, span_id, trace_id


def entry_events(parleyd, count, send):
    """Runs send() while counting `entry` events on the live stream; returns when `count` arrived."""
    request = urllib.request.Request(parleyd.web + "/api/events", headers={"Accept": "text/event-stream"})
    seen = 0
    with urllib.request.urlopen(request, timeout=120) as stream:
        sender = threading.Thread(target=send)
        sender.start()
        while seen < count:
            line = stream.readline()
            if not line:
                raise SystemExit("the live stream ended")
            if line.startswith(b"event: entry"):
                seen += 1
        sender.join()


def big_state(megabytes, variant):
    items = []
    size = 0
    i = 0
    while size < megabytes * 1_000_000:
        item = {"id": i, "title": f"item number {i}", "done": i % 3 == 0, "tags": ["groceries", "weekly", f"t{i % 17}"],
                "notes": "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 2, "price": round(i * 1.37, 2)}
        if variant and i % 5000 == 7:
            item["done"] = not item["done"]
        items.append(item)
        size += len(json.dumps(item, separators=(",", ":"))) + 1
        i += 1
    return json.dumps({"items": items, "count": len(items), "variant": variant, "user": {"name": "Ada", "prefs": {"theme": "dark"}}},
                      separators=(",", ":")).encode()


def wait_script(driver, script, timeout=60, *arguments):
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script, *arguments)
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {script}")
        time.sleep(0.01)  # polling the browser's state from outside; the numbers come from the browser's clock


def mark(driver, name, after=0.0):
    """The first performance mark `name` at or after `after` (ms on the page's clock): its startTime and detail."""
    return wait_script(driver, """
        const [name, after] = arguments;
        const found = performance.getEntriesByName(name, 'mark').find((m) => m.startTime >= after);
        return found ? {start: found.startTime, detail: found.detail} : null;""", 60, name, after)


def fmt(values):
    return f"median {statistics.median(values):7.1f} ms  (runs: {', '.join(f'{v:.1f}' for v in values)})"


LEVELS = ["trace", "debug", "info", "info", "info", "notice", "warning", "error"]


def seed_mixed(parleyd, count):
    """A session of `count` items: a tenth states, the rest log lines (eight in nine) and spans, sent in rounds of
    100 states and a batch of 900 records timed around them. Answers the session's id."""
    app = TelemetryApp(parleyd.port, name="Mixed")
    rounds = max(1, count // 1000)
    try:
        for round_index in range(rounds):
            now = time.time_ns()
            for i in range(100):
                app.record(f"step {round_index * 100 + i}", {"round": round_index, "i": i, "items": ["milk", "eggs"][: i % 3]})
            logs, spans = [], []
            trace = trace_id()
            root = span_id()
            for i in range(900):
                at = now + i * 20_000
                if i % 9 == 8:
                    spans.append(span(trace, span_id() if i != 8 else root, f"GET /items/{i}", at, at + (i % 50 + 1) * 100_000,
                                      parent=None if i == 8 else root, kind="client",
                                      status={"code": "error" if i % 90 == 17 else "ok"}, attributes={"http.status_code": 200}))
                else:
                    logs.append(log(at, LEVELS[i % len(LEVELS)], f"message {round_index}.{i}: loaded {i % 40} items", f"app.part{i % 7}",
                                    metadata={"round": round_index}))
            app.batch(logs=logs, spans=spans)
        session = parleyd.get("/api/sessions?limit=1")["sessions"][0]
        deadline = time.monotonic() + 600
        while parleyd.get(f"/api/sessions/{session['id']}/timeline?limit=1")["total"] < rounds * 1000:
            if time.monotonic() > deadline:
                raise SystemExit("the mixed session was not stored within 10 minutes")
            time.sleep(0.2)  # a benchmark's setup, polled from outside
        return session["id"]
    finally:
        app.close()


def bench_mixed(parleyd, driver, session_id, runs):
    total = parleyd.get(f"/api/sessions/{session_id}/timeline?limit=1")["total"]
    print(f"\ntimeline of {total} mixed entries (/sessions/{session_id}):")
    paints, fetches, middles, frames = [], [], [], []
    for _ in range(runs):
        driver.get(f"{parleyd.web}/sessions/{session_id}")
        paints.append(mark(driver, "parley:timeline-first-paint")["start"])
        fetches.append(driver.execute_script(
            "const r = performance.getEntriesByType('resource').find((e) => e.name.includes('/timeline?')); return r ? r.duration : 0"))
        middles.append(driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const viewport = document.querySelector('.tl-viewport');
            const index = Math.floor(Number(document.querySelector('.tl-slider').max) / 2);
            const started = performance.now();
            viewport.scrollTop = index * 22;
            (function check() {
              const row = document.querySelector(`.tl-row[data-index="${index}"]`);
              if (row && !row.classList.contains('loading')) requestAnimationFrame(() => done(performance.now() - started));
              else requestAnimationFrame(check);
            })();"""))
        # Scrolling: three rows a frame for 300 frames (through pages fetched on the way); each frame's time.
        frames.extend(driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const viewport = document.querySelector('.tl-viewport');
            const times = [];
            let last = performance.now();
            let step = 0;
            (function next(now) {
              if (step > 0) times.push(now - last);
              last = now;
              if (step++ === 300) return done(times);
              viewport.scrollTop += 3 * 22;
              requestAnimationFrame(next);
            })(performance.now());"""))
    print(f"  first page painted, from navigation start: {fmt(paints)}")
    print(f"  of which the timeline request took:       {fmt(fetches)}")
    print(f"  a jump to the middle, rows painted after:  {fmt(middles)}")
    frames.sort()
    print(f"  frames while scrolling 3 rows a frame:     median {statistics.median(frames):.1f} ms, 95th percentile "
          f"{frames[int(len(frames) * 0.95)]:.1f} ms, longest {frames[-1]:.1f} ms ({len(frames)} frames)")
    rows = driver.execute_script("return document.querySelectorAll('.tl-row').length")
    print(f"  rows in the DOM: {rows}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--megabytes", type=float, default=5)
    parser.add_argument("--mixed", type=int, default=100_000, help="entries of the mixed timeline (0: none)")
    parser.add_argument("--only-mixed", action="store_true", help="the mixed timeline alone")
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()

    parleyd = Parleyd(extra_arguments=["--max-messages-per-second", "0"],
                      environment={"PARLEY_HISTORY_MAX_ENTRIES": str(arguments.entries + arguments.mixed + 100)})
    apps = []
    driver = service = None
    try:
        if arguments.only_mixed:
            started = time.monotonic()
            mixed = seed_mixed(parleyd, arguments.mixed)
            print(f"recorded {arguments.mixed} mixed entries in {time.monotonic() - started:.1f} s")
            driver, service = start_browser()
            driver.get(parleyd.sign_in_url())
            bench_mixed(parleyd, driver, mixed, arguments.runs)
            return
        # A session of many small entries.
        many = OriginalApp(parleyd.port)
        apps.append(many)
        actions = ["tick", "hover(12, 40)", 'add("milk")', "toggle(3)", 'rename(0, "oat milk")']

        def send_many():
            for i in range(arguments.entries):
                many.send(f"{actions[i % len(actions)]} #{i}", {"i": i, "items": ["milk", "eggs"][: i % 3], "flag": i % 2 == 0})

        started = time.monotonic()
        entry_events(parleyd, arguments.entries, send_many)
        print(f"recorded {arguments.entries} entries in {time.monotonic() - started:.1f} s")
        many_session = parleyd.get("/api/sessions?limit=1")["sessions"][0]

        # A session of two large states that differ in a few places.
        large = OriginalApp(parleyd.port)
        apps.append(large)
        first, second = big_state(arguments.megabytes, False), big_state(arguments.megabytes, True)
        shot = app_screenshot(["milk", "eggs", "bread"], width=360, height=640)
        entry_events(parleyd, 2, lambda: (large.send("load", first, shot), large.send("edit", second, shot)))
        large_session = parleyd.get("/api/sessions?limit=1")["sessions"][0]
        large_entries = parleyd.get(f"/api/sessions/{large_session['id']}/entries")["entries"]
        print(f"recorded two states of {len(first) / 1e6:.2f} and {len(second) / 1e6:.2f} MB")

        driver, service = start_browser()
        driver.get(parleyd.sign_in_url())  # the session cookie, and the assets in the cache (as for anyone reopening the page)

        print(f"\ntimeline of {arguments.entries} entries (/sessions/{many_session['id']}):")
        paints, fetches, middles = [], [], []
        for _ in range(arguments.runs):
            driver.get(f"{parleyd.web}/sessions/{many_session['id']}")
            paint = mark(driver, "parley:timeline-first-paint")
            paints.append(paint["start"])
            fetches.append(driver.execute_script(
                "const r = performance.getEntriesByType('resource').find((e) => e.name.includes('/entries?')); return r ? r.duration : 0"))
            # Jump to the middle: the rows there come from a page fetched on demand.
            middles.append(driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const viewport = document.querySelector('.tl-viewport');
                const index = Math.floor(Number(document.querySelector('.tl-slider').max) / 2);
                const started = performance.now();
                viewport.scrollTop = index * 22;
                (function check() {
                  const row = document.querySelector(`.tl-row[data-index="${index}"]`);
                  if (row && !row.classList.contains('loading')) requestAnimationFrame(() => done(performance.now() - started));
                  else requestAnimationFrame(check);
                })();"""))
        print(f"  first page painted, from navigation start: {fmt(paints)}")
        print(f"  of which the entries request took:        {fmt(fetches)}")
        print(f"  a jump to the middle, rows painted after:  {fmt(middles)}")
        rows = driver.execute_script("return document.querySelectorAll('.tl-row').length")
        print(f"  rows in the DOM: {rows}")

        print(f"\na {len(first) / 1e6:.1f} MB state (/sessions/{large_session['id']}/entries/{large_entries[0]['sequence']}):")
        ready, pane, state_fetch, diffs, nexts, searches, during = [], [], [], [], [], [], []
        for _ in range(arguments.runs):
            driver.get(f"{parleyd.web}/sessions/{large_session['id']}/entries/{large_entries[1]['sequence']}")
            tree = mark(driver, "parley:tree-ready")
            ready.append(tree["start"])
            pane.append(tree["detail"]["elapsed"])
            state_fetch.append(driver.execute_script(
                "const r = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/state')); return r ? r.duration : 0"))
            # A small request while parleyd computes the diff of the two large states.
            during.append(driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const diffDone = performance.getEntriesByName('parley:diff-ready').length > 0;
                const started = performance.now();
                fetch('/api/sessions?limit=1', {cache: 'no-store'}).then(() => done(diffDone ? null : performance.now() - started));"""))
            diff = mark(driver, "parley:diff-ready")
            diffs.append(diff["start"])
            # The tree is usable: expand the 25 000-element array (its first chunk) and time it.
            driver.execute_script("document.querySelector(`.tree .trow[data-path='[\"items\"]']`).click()")
            # k: back to the first 5 MB entry, timed from the key press to its tree.
            before = driver.execute_script("return performance.now()")
            driver.execute_script("document.querySelector('.tl-viewport').focus()")
            driver.find_element("css selector", ".tl-viewport").send_keys("k")
            nexts.append(mark(driver, "parley:tree-ready", before)["start"] - before)
            search = driver.find_element("css selector", ".search-input")
            search.clear()
            before = driver.execute_script("return performance.now()")
            search.send_keys("no such text\n")  # the worst case: every value looked at
            head = wait_script(driver, "const h = document.querySelector('.search-head'); return h && h.textContent.includes('ms') ? h.textContent : null")
            searches.append(float(head.rsplit("·", 1)[1].strip().split()[0]))
        print(f"  tree usable, from navigation start:        {fmt(ready)}")
        print(f"  tree usable, from the entry pane's start:  {fmt(pane)}")
        print(f"  of which the state request took:           {fmt(state_fetch)}")
        print(f"  diff (3 changes) shown, from navigation:   {fmt(diffs)}")
        during = [value for value in during if value is not None]
        if during:
            print(f"  a small API request while the diff runs:   {fmt(during)}")
        print(f"  other 5 MB entry by key, to tree usable:   {fmt(nexts)}")
        print(f"  a search that looks at every value:        {fmt(searches)}")

        if arguments.mixed:
            started = time.monotonic()
            mixed = seed_mixed(parleyd, arguments.mixed)
            print(f"\nrecorded {arguments.mixed} mixed entries in {time.monotonic() - started:.1f} s")
            bench_mixed(parleyd, driver, mixed, arguments.runs)
    finally:
        if driver:
            stop_browser(driver, service)
        for app in apps:
            app.close()
        parleyd.stop()


if __name__ == "__main__":
    main()
