"""The web debugger in a real browser (headless Chromium) against a real parleyd, with states recorded by an app
speaking the original framing. Each test saves a screenshot of the page (conftest.py); errors in the browser's
console fail any test not marked console_errors_expected."""
import json
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from parley_tools.browser import ARTIFACTS, OriginalApp, Parleyd, app_screenshot, request_mark, requests_since, severe_console_entries, wait_for_entries, wait_until
from parley_tools.parleyd import Parleyd as DaemonProcess

TIMEOUT = 15
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"


def wait(driver, condition, timeout=TIMEOUT, message=""):
    # The page rebuilds what changes (rows, lists): an element found a moment ago may be gone; look again.
    return WebDriverWait(driver, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition, message)


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def wait_css(driver, selector, timeout=TIMEOUT):
    """The first element matching `selector`, once there is one."""
    return wait(driver, lambda d: (css(d, selector) or [None])[0], timeout, f"no element matches {selector}")


def entries_of(parleyd, session_id):
    return parleyd.get(f"/api/sessions/{session_id}/entries?limit=1000")["entries"]


def record(parleyd, app, frames):
    """Sends (action, state[, screenshot]) frames; answers the session and its entries once parleyd stored them all."""
    for frame in frames:
        app.send(*frame)
    session = wait_for_entries(parleyd, entries=len(frames))
    return session, entries_of(parleyd, session["id"])


def click_button(driver, label, scope=None):
    scope = scope or driver
    button = wait(driver, lambda d: next((b for b in scope.find_elements(By.TAG_NAME, "button") if b.text == label and b.is_enabled()), None),
                  message=f"no enabled button {label!r}")
    button.click()
    return button


def confirm(driver):
    wait_css(driver, "dialog#confirm[open]")
    driver.find_element(By.ID, "confirm-ok").click()
    wait(driver, lambda d: not css(d, "dialog#confirm[open]"))


def tree_row(driver, path):
    return wait_css(driver, f".tree .trow[data-path='{json.dumps(path, separators=(',', ':'))}']")


def expand(driver, path):
    """Expands the tree node at `path` (a click on its row, unless it is open already)."""
    row = tree_row(driver, path)
    if row.find_element(By.XPATH, "..").get_attribute("aria-expanded") != "true":
        row.click()
    wait(driver, lambda d: row.find_element(By.XPATH, "..").get_attribute("aria-expanded") == "true")
    return row


def screenshot_width(driver):
    return driver.execute_script("const i = document.querySelector('img.screenshot'); return i && i.complete ? i.naturalWidth : 0")


# The tests


def test_sessions_page_lists_the_session(parleyd, app, browser):
    session, _ = record(parleyd, app, [("load", {"items": []}, app_screenshot([])), ('add("milk")', {"items": ["milk"]}, app_screenshot(["milk"]))])
    browser.get(parleyd.web + "/")
    row = wait_css(browser, f'tr.session-row[data-id="{session["id"]}"]')
    assert session["appName"] in row.text
    assert row.find_element(By.CSS_SELECTOR, ".c-entries").text == "2"
    assert row.find_elements(By.CSS_SELECTOR, ".live-dot"), "a connected app's session is marked live"
    assert "127.0.0.1" in row.text, "the host the app connected from"
    assert not row.find_element(By.CSS_SELECTOR, "button[data-delete]").is_enabled(), "a live session cannot be deleted"


@pytest.mark.console_errors_expected  # the refused delete is a 403 the browser logs
def test_a_page_opened_without_the_sign_in_link_says_it_is_read_only_and_changes_nothing(parleyd, app, browser):
    session, _ = record(parleyd, app, [("load", {"items": []}, app_screenshot([]))])
    app.close()
    wait_until(parleyd, lambda: parleyd_session_ended(parleyd, session["id"]), "the session to end")
    # Signed in (the fixture opened parleyctl web's link): no notice.
    browser.get(parleyd.web + "/")
    wait_css(browser, f'tr.session-row[data-id="{session["id"]}"]')
    wait(browser, lambda d: d.execute_script("return document.body.classList.contains('read-only') === false && document.getElementById('access-notice').hidden"))
    # The same page without the cookie: read-only, said at once, and a delete is refused.
    browser.delete_all_cookies()
    browser.get(parleyd.web + "/")
    notice = wait(browser, lambda d: d.find_element(By.ID, "access-notice") if d.find_element(By.ID, "access-notice").is_displayed() else None)
    assert "Read-only" in notice.text and "parleyctl web" in notice.text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "read_only.png"))
    row = wait_css(browser, f'tr.session-row[data-id="{session["id"]}"]')
    row.find_element(By.CSS_SELECTOR, "button[data-delete]").click()
    ok = wait(browser, lambda d: d.find_element(By.ID, "confirm-ok") if d.find_element(By.ID, "confirm").get_attribute("open") is not None else None)
    ok.click()
    wait(browser, lambda d: "Read-only" in d.find_element(By.ID, "toasts").text)
    assert parleyd_session_exists(parleyd, session["id"])


def parleyd_session_ended(parleyd, session_id):
    with urllib.request.urlopen(f"{parleyd.web}/api/sessions/{session_id}", timeout=5) as answer:
        return json.loads(answer.read()).get("ended") is not None


def parleyd_session_exists(parleyd, session_id):
    try:
        with urllib.request.urlopen(f"{parleyd.web}/api/sessions/{session_id}", timeout=5):
            return True
    except urllib.error.HTTPError as error:
        return error.code != 404


def test_clicking_an_entry_shows_its_screenshot_and_state_tree(parleyd, app, browser):
    session, entries = record(parleyd, app, [
        ("load", {"items": [], "user": {"name": "Ada"}}, b""),
        ('add("milk")', {"items": [{"title": "milk", "done": False}], "user": {"name": "Ada"}}, app_screenshot(["milk"])),
    ])
    browser.get(parleyd.web + "/")
    wait_css(browser, f'tr.session-row[data-id="{session["id"]}"] .c-app a').click()
    wait_css(browser, f'.tl-row[data-seq="{entries[1]["sequence"]}"]').click()
    wait(browser, lambda d: d.current_url.endswith(f'/sessions/{session["id"]}/entries/{entries[1]["sequence"]}'))
    wait(browser, lambda d: screenshot_width(d) > 0, message="the screenshot did not load")
    assert screenshot_width(browser) == 180
    assert "1 item" in tree_row(browser, ["items"]).text
    expand(browser, ["items"])
    expand(browser, ["items", 0])
    assert tree_row(browser, ["items", 0, "title"]).find_element(By.CSS_SELECTOR, ".tvalue").text == '"milk"'
    assert tree_row(browser, ["user"]).is_displayed()

    wait_css(browser, f'.tl-row[data-seq="{entries[0]["sequence"]}"]').click()
    assert wait_css(browser, ".no-shot").text == "no screenshot"
    assert not css(browser, "img.screenshot")


def test_the_diff_highlights_the_changed_paths(parleyd, app, browser):
    session, entries = record(parleyd, app, [
        ("load", {"count": 1, "items": [{"title": "milk"}], "prefs": {"theme": "light", "sort": "title"}}),
        ('add("eggs")', {"count": 2, "items": [{"title": "milk"}, {"title": "eggs"}], "prefs": {"theme": "dark", "sort": "title"}}),
        ("rename", {"count": 2, "items": [{"title": "oat milk"}, {"title": "eggs"}], "prefs": {"theme": "dark"}, "extra": True}),
    ])
    first, second, third = (entry["sequence"] for entry in entries)
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{second}')
    # Against the previous entry: a changed number, a changed value deep down (revealed), an added element, a count.
    assert "chg-changed" in tree_row(browser, ["count"]).get_attribute("class")
    theme = tree_row(browser, ["prefs", "theme"])
    assert "chg-changed" in theme.get_attribute("class") and theme.is_displayed()
    assert "was \"light\"" in theme.text
    assert "chg-added" in tree_row(browser, ["items", 1]).get_attribute("class")
    assert "chg-countChanged" in tree_row(browser, ["items"]).get_attribute("class")
    assert "chg-changed" not in tree_row(browser, ["prefs", "sort"]).get_attribute("class")
    listed = [element.text for element in css(browser, ".changes .change-path")]
    assert set(listed) == {"count", "items", "items[1]", "prefs.theme"}, listed
    assert f"Changes vs #{first}" in wait_css(browser, ".changes-panel summary").text

    # Against any entry: ?diff= in the URL.
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{third}?diff={first}')
    wait(browser, lambda d: f"Changes vs #{first}" in wait_css(d, ".changes-panel summary").text)
    assert "chg-changed" in tree_row(browser, ["items", 0, "title"]).get_attribute("class")
    assert "chg-added" in tree_row(browser, ["extra"]).get_attribute("class")
    removed = wait_css(browser, ".tghost[data-path='[\"prefs\",\"sort\"]'] .trow")
    assert "chg-removed" in removed.get_attribute("class") and "removed" in removed.text

    # Picking the other entry in the timeline (⇄) puts it in the URL.
    row = wait_css(browser, f'.tl-row[data-seq="{second}"]')
    ActionChains(browser).move_to_element(row).perform()
    row.find_element(By.CSS_SELECTOR, ".tl-diff").click()
    wait(browser, lambda d: d.current_url.endswith(f"/entries/{third}?diff={second}"))
    wait(browser, lambda d: f"Changes vs #{second}" in wait_css(d, ".changes-panel summary").text)
    assert "chg-changed" not in tree_row(browser, ["count"]).get_attribute("class")


def test_a_new_entry_appears_without_a_reload(parleyd, app, browser):
    session, _ = record(parleyd, app, [("load", {"n": 0})])
    browser.get(f'{parleyd.web}/sessions/{session["id"]}')
    wait_css(browser, ".tl-row[data-seq]")
    marker = f"live-{time.monotonic_ns()}"
    # The page notes when the row shows up (its clock and Python's are the same system clock).
    browser.execute_script("""
        window.__sameDocument = true;
        const marker = arguments[0];
        (function check() {
          const found = [...document.querySelectorAll('.tl-row .c-action')].some((cell) => cell.textContent === marker);
          if (found) window.__seenAt = Date.now(); else requestAnimationFrame(check);
        })();""", marker)
    sent = time.time() * 1000
    watched = request_mark(browser)
    app.send(marker, {"n": 1})
    row = wait(browser, lambda d: next((cell for cell in css(d, ".tl-row .c-action") if cell.text == marker), None), message="the new entry did not appear")
    assert row.is_displayed()
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"
    latency = browser.execute_script("return window.__seenAt") - sent
    print(f"new entry visible {latency:.0f} ms after the app sent it")
    assert not [path for path in requests_since(browser, watched) if path.startswith(f'/api/sessions/{session["id"]}/entries')], \
        "the page listed the entries again instead of taking the live event"
    assert "2 entries" in wait_css(browser, ".tl-count").text
    assert wait_css(browser, ".session-head .entry-count").text.startswith("2 ")

    # The sessions page: entry counts and new sessions arrive live too.
    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="sessions"]').click()
    counter = wait_css(browser, f'tr.session-row[data-id="{session["id"]}"] .c-entries')
    browser.execute_script("window.__sameDocument = true")
    app.send("again", {"n": 2})
    wait(browser, lambda d: counter.text == "3", message="the entry count did not change")
    other = OriginalApp(parleyd.port)
    try:
        other.send("hello", {"other": True})
        wait(browser, lambda d: len(css(d, "tr.session-row")) == 2, message="the second app's session did not appear")
    finally:
        other.close()
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"


def test_a_session_ends_live(parleyd, app, browser):
    session, _ = record(parleyd, app, [("load", {"n": 0})])
    browser.get(f'{parleyd.web}/sessions/{session["id"]}')
    wait_css(browser, ".session-head .badge.live")
    assert not next(b for b in css(browser, ".session-head button") if b.text == "Delete…").is_enabled()
    browser.execute_script("window.__sameDocument = true")
    app.close()
    wait(browser, lambda d: not css(d, ".session-head .badge.live"), message="the session still shows as live after its app left")
    wait(browser, lambda d: next(b for b in css(d, ".session-head button") if b.text == "Delete…").is_enabled())
    assert "open" not in wait_css(browser, ".session-meta").text, "the end time is shown"
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"


def test_peers_arrive_and_leave_live(parleyd, app, browser):
    record(parleyd, app, [("load", {"n": 0})])
    browser.get(parleyd.web + "/peers")
    wait(browser, lambda d: len(css(d, "tr.peer-row.connected")) == 1)
    browser.execute_script("window.__sameDocument = true")
    other = OriginalApp(parleyd.port)
    try:
        other.send("hello", {"other": True})
        wait(browser, lambda d: len(css(d, "tr.peer-row.connected")) == 2, message="a connecting app did not appear on the peers page")
        # What the page says of a peer: its address as typed, the types it accepts, whether it proved a secret.
        local_port = other.sock.getsockname()[1]
        row = wait(browser, lambda d: next((r for r in css(d, "tr.peer-row.connected") if f"127.0.0.1:{local_port}" in r.text), None),
                   message="the new app's address is not shown")
        cells = row.find_elements(By.CSS_SELECTOR, "td")
        assert "parley.debugger.restore" in row.find_element(By.CSS_SELECTOR, ".accepts").text
        assert cells[7].text == "no", "an app in the original framing, open mode: not authenticated"
        assert cells[3].text == "original"
    finally:
        other.close()
    wait(browser, lambda d: len(css(d, "tr.peer-row.connected")) == 1, message="a leaving app did not leave the peers page")
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"


def test_replay_reaches_the_app(parleyd, app, browser):
    state_bytes = b'{"n": 1, "total": 1.10, "items": ["milk"]}'
    session, entries = record(parleyd, app, [("load", state_bytes, app_screenshot(["milk"])), ("next", {"n": 2, "total": 2.2, "items": []})])
    first = entries[0]["sequence"]
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{first}')
    wait_css(browser, ".tree .trow")
    click_button(browser, "Replay to app")
    confirm(browser)
    assert app.wait_for_replay(1) == state_bytes, "the app gets the state exactly as it sent it"
    assert "sent to" in wait_css(browser, ".toast-success").text

    # To every connected app.
    other = OriginalApp(parleyd.port)
    try:
        other.send("other", {"other": True})
        wait_until(parleyd, lambda: len(parleyd.get("/api/peers")["peers"]) >= 2, "the second app to connect")
        click_button(browser, "Replay to all…")
        confirm(browser)
        assert app.wait_for_replay(2) == state_bytes
        assert other.wait_for_replay(1) == state_bytes
    finally:
        other.close()


def test_hostile_text_is_shown_as_text(parleyd, app, browser):
    second_html = HOSTILE.replace("pwned=1", "pwned=3")
    session, entries = record(parleyd, app, [
        (HOSTILE, {"html": HOSTILE, "list": [HOSTILE]}, app_screenshot(["x"])),
        (HOSTILE, {"html": second_html, "list": [HOSTILE], "<img src=x onerror=window.pwned=4>": 1}, app_screenshot(["y"])),
    ])
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{entries[1]["sequence"]}')
    assert tree_row(browser, ["html"]).find_element(By.CSS_SELECTOR, ".tvalue").text == json.dumps(second_html)
    expand(browser, ["list"])
    assert tree_row(browser, ["list", 0]).find_element(By.CSS_SELECTOR, ".tvalue").text == json.dumps(HOSTILE)
    assert tree_row(browser, ["<img src=x onerror=window.pwned=4>"]).find_element(By.CSS_SELECTOR, ".tkey").text == "<img src=x onerror=window.pwned=4>"
    assert wait_css(browser, ".entry-title .action").text == HOSTILE
    assert all(cell.text == HOSTILE for cell in css(browser, ".tl-row .c-action"))
    wait(browser, lambda d: any(HOSTILE in change.text for change in css(d, ".changes .change")), message="the diff lists the values")
    search = wait_css(browser, ".search-input")
    search.send_keys("onerror", Keys.ENTER)
    wait(browser, lambda d: any(HOSTILE in hit.text for hit in css(d, ".search-hit")))

    assert browser.execute_script("return typeof window.pwned") == "undefined"
    images = browser.execute_script("return [...document.images].map((image) => image.className + ' ' + image.getAttribute('src'))")
    assert images == [f'screenshot /api/entries/{entries[1]["sequence"]}/screenshot'], images
    assert browser.execute_script("return document.querySelectorAll('script').length") == 1, "only the page's own module"
    assert browser.execute_script("return document.querySelectorAll('[onerror]').length") == 0
    assert HOSTILE in browser.find_element(By.TAG_NAME, "body").text, "the characters are visible"


def test_the_browser_console_shows_no_errors(parleyd, app, browser):
    session, entries = record(parleyd, app, [("load", {"a": 1}, app_screenshot(["a"])), ("b", {"a": 2, "b": [1, 2, 3]}), ("c", {"a": 3})])
    browser.get(parleyd.web + "/")
    wait_css(browser, "tr.session-row .c-app a").click()
    wait_css(browser, ".tl-row[data-seq]").click()
    wait(browser, lambda d: screenshot_width(d) > 0)
    browser.find_element(By.CSS_SELECTOR, ".tl-viewport").send_keys("j")
    wait_css(browser, ".changes .change")
    browser.find_element(By.CSS_SELECTOR, ".search-input").send_keys("b", Keys.ENTER)
    wait_css(browser, ".search-hit").click()
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{entries[2]["sequence"]}?diff={entries[0]["sequence"]}')
    wait_css(browser, ".changes .change")
    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="peers"]').click()
    wait_css(browser, "tr.peer-row")
    severe = severe_console_entries(browser)
    assert severe == [], severe


def test_search_reveals_a_node_and_a_pin_follows_it(parleyd, app, browser):
    items = [{"title": f"item {i}", "done": False} for i in range(1000)]
    frames = []
    for step in range(4):
        if step == 2:
            items[950]["done"] = True
        frames.append((f"step {step}", json.dumps({"items": items, "step": step}).encode()))  # encoded now: items changes
    session, entries = record(parleyd, app, frames)
    seqs = [entry["sequence"] for entry in entries]
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{seqs[1]}')
    search = wait_css(browser, ".search-input")
    search.send_keys("item 950", Keys.ENTER)
    hit = wait(browser, lambda d: next((b for b in css(d, ".search-hit") if b.text.startswith("items[950].title")), None))
    hit.click()
    row = tree_row(browser, ["items", 950, "title"])
    assert row.is_displayed()
    assert browser.execute_script("return document.querySelectorAll('.tree .trow').length") < 400, "only a chunk of the list is built"

    # Pin items[950]: the pin panel follows it, and the timeline marks the entry that changed it.
    pin_row = tree_row(browser, ["items", 950])
    ActionChains(browser).move_to_element(pin_row).perform()
    pin_row.find_element(By.CSS_SELECTOR, "button[data-act='pin']").click()
    panel = wait_css(browser, ".pin-panel:not([hidden])")
    assert "items[950]" in panel.text and "unchanged since" in panel.text
    wait(browser, lambda d: "pin-changed" in wait_css(d, f".tl-row[data-seq='{seqs[2]}']").get_attribute("class"),
         message="the timeline does not mark the entry that changed the pinned value")
    assert all("pin-changed" not in r.get_attribute("class") for r in css(browser, ".tl-row") if r.get_attribute("data-seq") != str(seqs[2]))
    browser.find_element(By.CSS_SELECTOR, ".tl-viewport").send_keys("j")
    wait(browser, lambda d: "changed since" in wait_css(d, ".pin-panel .pin-status").text and "unchanged" not in wait_css(d, ".pin-panel .pin-status").text)

    # Copying a path and a value: what reaches the clipboard (its writer observed in the page), and the word of it.
    browser.execute_script("window.__copied = []; navigator.clipboard.writeText = async (text) => { window.__copied.push(text); };")
    pin_row = tree_row(browser, ["items", 950])  # the next entry's tree (the expanded nodes kept)
    ActionChains(browser).move_to_element(pin_row).perform()
    pin_row.find_element(By.CSS_SELECTOR, "button[data-act='copy-path']").click()
    wait(browser, lambda d: any("Copied the path" in toast.text for toast in css(d, ".toast")), message="no word of the copy")
    pin_row = tree_row(browser, ["items", 950])
    ActionChains(browser).move_to_element(pin_row).perform()
    pin_row.find_element(By.CSS_SELECTOR, "button[data-act='copy-value']").click()
    copied = wait(browser, lambda d: (lambda c: c if len(c) == 2 else None)(d.execute_script("return window.__copied")))
    assert copied[0] == "items[950]"
    assert json.loads(copied[1]) == {"title": "item 950", "done": True}

    # Search by path: the node whose path matches, found as a path (not by its value).
    search = wait_css(browser, ".search-input")
    search.clear()
    search.send_keys("items[951].done", Keys.ENTER)
    wait(browser, lambda d: next((b for b in css(d, ".search-hit") if b.text.startswith("items[951].done")), None),
         message="searching a path found no node")


def test_every_view_url_loads_directly(parleyd, app, browser):
    session, entries = record(parleyd, app, [("load", {"a": 1}, app_screenshot(["a"])), ("b", {"a": 2})])
    sid, first, second = session["id"], entries[0]["sequence"], entries[1]["sequence"]
    views = {
        "/": "tr.session-row",
        f"/sessions/{sid}": ".tl-row[data-seq]",
        f"/sessions/{sid}/entries/{second}": f".tl-row.selected[data-seq='{second}']",
        f"/sessions/{sid}/entries/{second}?diff={first}": ".changes .change",
        "/peers": "tr.peer-row",
    }
    for path, selector in views.items():
        browser.get(parleyd.web + path)
        wait_css(browser, selector)
        browser.refresh()
        wait_css(browser, selector)
        assert browser.current_url == parleyd.web + path
    # The entry views show the entry.
    browser.get(f"{parleyd.web}/sessions/{sid}/entries/{second}")
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{second}")

    # Back and forward through views reached by clicking.
    browser.get(parleyd.web + "/")
    wait_css(browser, "tr.session-row .c-app a").click()
    wait_css(browser, f".tl-row[data-seq='{first}']").click()
    wait(browser, lambda d: d.current_url.endswith(f"/entries/{first}"))
    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="peers"]').click()
    wait_css(browser, "tr.peer-row")
    browser.back()
    wait(browser, lambda d: d.current_url.endswith(f"/sessions/{sid}/entries/{first}"))
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{first}")
    browser.back()
    wait(browser, lambda d: d.current_url.endswith(f"/sessions/{sid}"))
    wait_css(browser, ".entry-head .placeholder")
    browser.back()
    wait_css(browser, "tr.session-row")
    browser.forward()
    browser.forward()
    wait(browser, lambda d: d.current_url.endswith(f"/entries/{first}"))
    wait(browser, lambda d: wait_css(d, ".entry-title .seq").text == f"#{first}")


def test_an_entry_deep_in_a_long_session_opens_in_view(parleyd, app, browser):
    session, entries = record(parleyd, app, [(f"step {i}", {"i": i}) for i in range(700)])
    target = entries[555]["sequence"]
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/{target}')
    row = wait_css(browser, f".tl-row.selected[data-seq='{target}']")
    in_view = browser.execute_script("""
        const row = arguments[0].getBoundingClientRect(), viewport = document.querySelector('.tl-viewport').getBoundingClientRect();
        return row.top >= viewport.top && row.bottom <= viewport.bottom;""", row)
    assert in_view, "the selected entry is scrolled into the timeline's view"
    assert browser.execute_script("return document.querySelectorAll('.tl-row').length") < 120, "only the rows in view exist"
    assert wait_css(browser, ".tl-count").text.startswith("556 / 700")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    wait(browser, lambda d: d.current_url.endswith(f'/entries/{entries[-1]["sequence"]}'))
    wait_css(browser, f".tl-row.selected[data-seq='{entries[-1]['sequence']}']")


@pytest.mark.parametrize("parleyd_config", [{"actionFilters": {"ticks": "tick*"}}])
def test_keyboard_slider_and_filters(parleyd, app, browser):
    actions = ["tick 1", "add(a)", "tick 2", "add(b)", "tick 3"]
    session, entries = record(parleyd, app, [(action, {"i": i}) for i, action in enumerate(actions)])
    seqs = [entry["sequence"] for entry in entries]
    browser.get(f'{parleyd.web}/sessions/{session["id"]}')
    wait_css(browser, f".tl-row[data-seq='{seqs[0]}']").click()
    at = lambda index: (lambda d: d.current_url.endswith(f"/entries/{seqs[index]}"))  # noqa: E731
    body = browser.find_element(By.TAG_NAME, "body")
    wait(browser, at(0))
    body.send_keys("j")
    wait(browser, at(1))
    body.send_keys(Keys.ARROW_DOWN)
    wait(browser, at(2))
    body.send_keys("k")
    wait(browser, at(1))
    body.send_keys(Keys.END)
    wait(browser, at(4))
    body.send_keys(Keys.HOME)
    wait(browser, at(0))
    # The slider scrubs.
    browser.execute_script("const s = document.querySelector('.tl-slider'); s.value = 3; s.dispatchEvent(new Event('input'))")
    wait(browser, at(3))
    assert wait_css(browser, ".entry-title .action").text == actions[3]

    # "/" focuses the pattern; a glob shows or hides.
    body.send_keys("/")
    pattern = browser.switch_to.active_element
    assert "tl-pattern" in pattern.get_attribute("class")
    pattern.send_keys("add*", Keys.ENTER)
    shown = lambda d: [cell.text for cell in css(d, ".tl-row .c-action")]  # noqa: E731
    wait(browser, lambda d: shown(d) == ["add(a)", "add(b)"])
    browser.find_element(By.CSS_SELECTOR, ".tl-mode option[value='hide']").click()
    wait(browser, lambda d: shown(d) == ["tick 1", "tick 2", "tick 3"])
    pattern.clear()
    pattern.send_keys(Keys.ENTER)
    wait(browser, lambda d: len(shown(d)) == 5)
    # A named filter from the configuration.
    wait_css(browser, ".tl-named option[value='ticks']").click()
    wait(browser, lambda d: shown(d) == ["add(a)", "add(b)"])  # still "hide"
    browser.find_element(By.CSS_SELECTOR, ".tl-mode option[value='show']").click()
    wait(browser, lambda d: shown(d) == ["tick 1", "tick 2", "tick 3"])


def test_export_import_and_delete(parleyd, app, browser):
    session, entries = record(parleyd, app, [("load", {"a": 1}, app_screenshot(["a"])), ("b", {"a": 2})])
    app.close()
    wait_until(parleyd, lambda: not parleyd.get(f'/api/sessions/{session["id"]}')["live"], "the session to end")
    browser.get(parleyd.web + "/")
    row = wait_css(browser, f'tr.session-row[data-id="{session["id"]}"]')
    wait(browser, lambda d: row.find_element(By.CSS_SELECTOR, "button[data-delete]").is_enabled())
    href = row.find_element(By.LINK_TEXT, "Export").get_attribute("href")
    with urllib.request.urlopen(href, timeout=10) as response:
        exported = response.read()
        assert "attachment" in response.headers.get("Content-Disposition", "")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.jsonl"
        path.write_bytes(exported)
        browser.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(str(path))
        wait(browser, lambda d: "/sessions/" in d.current_url and not d.current_url.endswith(f'/sessions/{session["id"]}'))
    wait_css(browser, ".session-head .badge")
    assert "imported" in browser.find_element(By.CSS_SELECTOR, ".session-head").text
    wait(browser, lambda d: len(css(d, ".tl-row[data-seq]")) == 2)

    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="sessions"]').click()
    wait(browser, lambda d: len(css(d, "tr.session-row")) == 2)
    wait_css(browser, f'tr.session-row[data-id="{session["id"]}"] button[data-delete]').click()
    confirm(browser)
    wait(browser, lambda d: not css(d, f'tr.session-row[data-id="{session["id"]}"]'), message="the deleted session is still listed")
    assert len(css(browser, "tr.session-row")) == 1
    with pytest.raises(urllib.error.HTTPError) as error:
        parleyd.get(f'/api/sessions/{session["id"]}')
    assert error.value.code == 404


@pytest.mark.console_errors_expected
def test_api_errors_are_shown(parleyd, app, browser):
    session, _ = record(parleyd, app, [("load", {"a": 1})])
    browser.get(parleyd.web + "/sessions/999")
    panel = wait_css(browser, ".error-panel")
    assert "Session 999: Not found" in panel.text
    assert len(panel.find_element(By.TAG_NAME, "p").text) > 0, "the problem's detail is shown"
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/99999')
    assert "Entry 99999: Not found" in wait_css(browser, ".error-panel").text
    # A malformed pattern (a lone backslash at the end): 400, shown under the filter.
    pattern = wait_css(browser, ".tl-pattern")
    pattern.send_keys("add\\", Keys.ENTER)
    wait(browser, lambda d: "Bad request" in wait_css(d, ".tl-error .error-panel").text)
    # A file that is not an export: the import's problem is shown as a notice.
    browser.get(parleyd.web + "/")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "not-an-export.jsonl"
        path.write_text("this is not JSON\n")
        wait_css(browser, "input[type=file]").send_keys(str(path))
        toast = wait_css(browser, ".toast-error")
    assert "Could not import not-an-export.jsonl: Bad request" in toast.text
    assert len(toast.find_element(By.CSS_SELECTOR, ".toast-detail").text) > 0, "the problem's detail is shown"


# What the page calls parleyd's API with, and what it makes of a problem: the title and detail it shows.
API_ERROR = """
    const [method, parameters, done] = arguments;
    import('/assets/api.js').then(({ api }) => api[method](...parameters))
      .then(() => done(null), (error) => done({ status: error.status, title: error.title, detail: error.detail }));"""


@pytest.mark.console_errors_expected
def test_errors_name_no_command_line_tool(parleyd, app, browser):
    """parleyd's texts say what happened and what is there; the hints that name parleyctl's commands and options
    are parleyctl's own (tested in ParleyCtlTests): the page never shows one."""
    session, entries = record(parleyd, app, [("load", {"a": 1}), ("next", {"a": 2})])
    first = entries[0]["sequence"]
    browser.get(f'{parleyd.web}/sessions/{session["id"]}/entries/99999')
    missing = wait_css(browser, ".entry-pane .error-panel").text
    assert "Entry 99999: Not found" in missing and "there is no entry 99999" in missing, missing

    diff = browser.execute_async_script(API_ERROR, "diff", [{"to": first}])
    assert diff["status"] == 400
    assert diff["detail"] == f'entry {first} is the first of session {session["id"]}: there is nothing before it to compare with'

    unknown = browser.execute_async_script(API_ERROR, "entries", [session["id"], {"filter": "nope"}])
    assert unknown["status"] == 400 and 'no filter named "nope"' in unknown["detail"], unknown

    app.close()
    wait_until(parleyd, lambda: not parleyd.get(f'/api/sessions/{session["id"]}')["live"], "the session to end")
    gone = browser.execute_async_script(API_ERROR, "replay", [first, {}])
    assert gone["status"] == 409 and gone["detail"].startswith(f'the app of session {session["id"]} (') and "is not connected" in gone["detail"], gone

    for text in (missing, diff["detail"], unknown["detail"], gone["detail"]):
        assert "parleyctl" not in text and "--" not in text, text


@pytest.mark.console_errors_expected
@pytest.mark.parametrize("at_entry", [False, True], ids=["timeline", "entry"])
def test_a_malformed_glob_is_reported_once(parleyd, app, browser, at_entry):
    """A lone backslash at the end: the page says so once, in one panel under the filter (also when an entry is
    selected, where both the entry's position and the page of entries are asked for), naming the pattern once."""
    session, entries = record(parleyd, app, [("add(a)", {"a": 1}), ("add(b)", {"a": 2})])
    path = f'/sessions/{session["id"]}' + (f'/entries/{entries[1]["sequence"]}' if at_entry else "")
    browser.get(parleyd.web + path)
    wait_css(browser, ".tl-row[data-seq]")
    mark = request_mark(browser)
    wait_css(browser, ".tl-pattern").send_keys("add\\", Keys.ENTER)
    wait_css(browser, ".tl-error .error-panel")
    asked = lambda d: [p for p in requests_since(d, mark) if "pattern=add%5C" in p]  # noqa: E731
    wait(browser, lambda d: len(asked(d)) == (2 if at_entry else 1), message="the position (at an entry) and the entries")
    # At an entry both answers may draw the panel, the second replacing the first: read it afresh each time.
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".tl-error .error-panel").text.startswith("Could not list the entries: Bad request"),
         message="the panel's text")
    text = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".tl-error").text)
    assert text.count("ends with a lone '\\'") == 1, text
    assert text.count('"add\\"') == 1, text
    assert len(css(browser, ".error-panel")) == 1 and not css(browser, ".toast"), "said elsewhere too"


def notice_shown(driver):
    notice = driver.find_element(By.ID, "live-notice")
    return notice if notice.is_displayed() else None


@pytest.mark.console_errors_expected  # the browser logs each refused reconnect
def test_when_parleyd_goes_away_nothing_is_called_live_until_it_is_back(parleyd, app, browser):
    """The live stream is lost and cannot reconnect: the page says parleyd cannot be reached and calls no session
    live (a stale mark instead, Delete still held back); once a parleyd answers at the same address again the
    notice goes and live marks come from it again, without a reload. The sessions list, then a session's page."""
    session, _ = record(parleyd, app, [("load", {"n": 0})])
    browser.get(parleyd.web + "/")
    row = f'tr.session-row[data-id="{session["id"]}"]'
    wait_css(browser, f"{row} .live-dot")
    assert notice_shown(browser) is None
    browser.execute_script("window.__sameDocument = true")
    address = parleyd.web.removeprefix("http://")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    DaemonProcess.stop(parleyd, timeout=5)   # the process only: its data directory stays for the one that comes back
    notice = wait(browser, notice_shown, message="no notice that parleyd cannot be reached")
    assert "parleyd is unreachable" in notice.text and "reconnecting" in notice.text, notice.text
    wait(browser, lambda d: css(d, f"{row} .live-dot.stale"), message="the session is still shown live")
    assert not css(browser, f"{row} .live-dot:not(.stale)") and not css(browser, "tr.session-row.live")
    assert browser.find_element(By.ID, "live-status").text == "reconnecting…"
    browser.save_screenshot(str(ARTIFACTS / "live_lost_sessions.png"))

    back = Parleyd(extra_arguments=["--web-listen", address, "--data-directory", parleyd.directory])
    try:
        wait(browser, lambda d: notice_shown(d) is None, timeout=30, message="the notice stayed after parleyd came back")
        assert browser.find_element(By.ID, "live-status").text == "live"
        # What the new parleyd says: the session ended with its app; a new app's session is live.
        wait(browser, lambda d: not css(d, f"{row} .live-dot"), message="the ended session still has a mark")
        other = OriginalApp(back.port)
        try:
            other.send("hello", {"n": 1})
            new = f'tr.session-row.live[data-id="{session["id"] + 1}"]'
            wait_css(browser, f"{new} .live-dot:not(.stale)")
            browser.save_screenshot(str(ARTIFACTS / "live_back.png"))
            assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"

            # A session's page, live, when parleyd goes again.
            wait_css(browser, f"{new} .c-app a").click()
            wait_css(browser, ".session-head .badge.live")
            DaemonProcess.stop(back, timeout=5)
            wait(browser, notice_shown, message="no notice on the session's page")
            wait(browser, lambda d: not css(d, ".session-head .badge.live, .session-head .live-dot:not(.stale)"), message="the session still shows as live")
            assert wait_css(browser, ".session-head .badge.stale").text == "live?"
            assert not next(b for b in css(browser, ".session-head button") if b.text == "Delete…").is_enabled()
            browser.save_screenshot(str(ARTIFACTS / "live_lost_session.png"))
        finally:
            other.close()
    finally:
        browser.get("about:blank")   # before the test's end, so the stream's reconnects are not logged into the next
        back.stop()
