#!/usr/bin/env python3
"""Browser timings of the web debugger (not a pass/fail test): records a 10 000-entry session and two 5 MB
states into a fresh parleyd, then measures in headless Chromium, with the page's own performance marks
(performance.mark / PerformanceObserver, read back through WebDriver):

  * time to the first painted page of the 10 000-entry timeline (from navigation start), and to a row in the
    middle after jumping there (a page fetched on demand);
  * time until a 5 MB state's tree is usable (from navigation start, and from the entry pane's start), the
    diff's arrival, moving to the next 5 MB entry with a key, and a search over the state.

  python3 Tests/web/bench_web.py [--entries 10000] [--megabytes 5] [--runs 3]     (or scripts/web-tests --bench)
"""
import argparse
import json
import statistics
import threading
import time
import urllib.request

from parley_tools.browser import OriginalApp, Parleyd, app_screenshot, start_browser, stop_browser


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--megabytes", type=float, default=5)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()

    parleyd = Parleyd(extra_arguments=["--max-messages-per-second", "0"],
                      environment={"PARLEY_HISTORY_MAX_ENTRIES": str(arguments.entries + 100)})
    apps = []
    driver = service = None
    try:
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
    finally:
        if driver:
            stop_browser(driver, service)
        for app in apps:
            app.close()
        parleyd.stop()


if __name__ == "__main__":
    main()
