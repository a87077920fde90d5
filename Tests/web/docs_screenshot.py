#!/usr/bin/env python3
"""Makes docs/web-debugger.png: the web debugger's entry view (screenshot, state tree, diff) for a small list app,
recorded into a fresh parleyd and shown in headless Chromium.

  python3 Tests/web/docs_screenshot.py [OUTPUT.png]
"""
import copy
import sys
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from parley_tools.browser import REPOSITORY, OriginalApp, Parleyd, app_screenshot, start_browser, stop_browser, wait_for_entries


def main():
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else REPOSITORY / "docs" / "web-debugger.png"
    state = {"items": [], "filter": "all", "editing": None, "user": {"name": "Ada", "prefs": {"theme": "light", "sort": "added"}}, "total": 0}
    steps = []

    def step(action, change):
        change(state)
        state["total"] = len(state["items"])
        steps.append((action, copy.deepcopy(state)))

    step("load", lambda s: None)
    step('add("milk")', lambda s: s["items"].append({"title": "milk", "done": False, "quantity": 1}))
    step('add("eggs")', lambda s: s["items"].append({"title": "eggs", "done": False, "quantity": 12}))
    step('add("bread")', lambda s: s["items"].append({"title": "bread", "done": False, "quantity": 1}))
    step("toggle(1)", lambda s: s["items"][1].update(done=True))
    step('rename(0, "oat milk")', lambda s: (s["items"][0].update(title="oat milk", quantity=2), s.update(editing=None)))
    step('setFilter("open")', lambda s: s.update(filter="open"))
    step("sort(.title)", lambda s: s["user"]["prefs"].update(sort="title"))

    parleyd = Parleyd()
    app = OriginalApp(parleyd.port)
    driver = service = None
    try:
        for action, value in steps:
            titles = [f"{item['title']}{' ✓' if item['done'] else ''}" for item in value["items"]]
            app.send(action, value, app_screenshot(titles, width=270, height=480))
        session = wait_for_entries(parleyd, entries=len(steps))
        entries = parleyd.get(f"/api/sessions/{session['id']}/entries")["entries"]
        driver, service = start_browser(width=1400, height=900)
        driver.get(f"{parleyd.web}/sessions/{session['id']}/entries/{entries[5]['sequence']}")
        wait = WebDriverWait(driver, 15)
        wait.until(lambda d: d.execute_script("const i = document.querySelector('img.screenshot'); return i && i.complete && i.naturalWidth > 0"))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".trow.chg-changed"))
        driver.execute_script("document.activeElement.blur()")
        output.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(output))
        print(f"wrote {output}")
    finally:
        if driver:
            stop_browser(driver, service)
        app.close()
        parleyd.stop()


if __name__ == "__main__":
    main()
