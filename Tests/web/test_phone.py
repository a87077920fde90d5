"""The web debugger on a phone: a 390×844 window (an iPhone 12 to 15 held upright). No view scrolls sideways, and
every action — Export, Delete, Replay, the drawer's settings and actions — is on screen and does its work when
tapped. Screenshots of each view go to the artifacts folder (phone_*.png)."""
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from parley_tools.browser import ARTIFACTS, app_screenshot
from test_drawer import DrawerApp, start_app  # noqa: F401 (start_app is a fixture)
from test_web import css, record, wait, wait_css

PHONE = (390, 844)

# Overflow the page can have without scrolling sideways: scroll containers whose content is wider than they are.
WIDE_SCROLLERS = """
  return Array.from(document.querySelectorAll('#view *'))
    .filter((element) => {
      const style = getComputedStyle(element);
      return ['auto', 'scroll'].includes(style.overflowX) && element.scrollWidth > element.clientWidth + 1;
    })
    .map((element) => `${element.tagName.toLowerCase()}.${element.className} ${element.scrollWidth} > ${element.clientWidth}`);
"""


@pytest.fixture
def phone(browser):
    size = browser.get_window_size()
    browser.set_window_size(*PHONE)
    try:
        yield browser
    finally:
        browser.set_window_size(size["width"], size["height"])


def shot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"phone_{name}.png"))


def assert_no_sideways_scroll(driver, view):
    width = driver.execute_script("return window.innerWidth")
    assert width <= PHONE[0], f"the window is {width} px wide"
    document = driver.execute_script("return document.documentElement.scrollWidth")
    assert document <= width, f"{view}: the page is {document} px wide in a {width} px window"
    wide = driver.execute_script(WIDE_SCROLLERS)
    assert wide == [], f"{view}: these scroll sideways: {wide}"


def assert_on_screen(driver, element, what):
    """Displayed, enabled, and wholly inside the window's width (so a thumb reaches it without scrolling)."""
    assert element.is_displayed(), f"{what} is not displayed"
    left, right, width = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right, window.innerWidth]", element)
    assert 0 <= left and right <= width, f"{what} is at {left}–{right}, outside 0–{width}"


def assert_tappable(driver, element, what):
    """In view (scrolled there, as a thumb would), within the window's width, and the element a tap at its centre
    lands on: nothing covers it."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    assert element.is_displayed() and element.is_enabled(), f"{what} is not displayed and enabled"
    left, right, width, hit = driver.execute_script("""
        const r = arguments[0].getBoundingClientRect();
        const at = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
        return [r.left, r.right, window.innerWidth, at !== null && arguments[0].contains(at)];""", element)
    assert 0 <= left and right <= width, f"{what} is at {left}–{right} px, outside the window's 0–{width}"
    assert hit, f"something covers {what}"


def button(driver, scope, label):
    return wait(driver, lambda d: next((b for b in scope.find_elements(By.CSS_SELECTOR, "button, a.button") if b.text == label), None),
                message=f"no button {label!r}")


def answer_dialog(driver, name, ok=True):
    """The page's own confirmation: fits the window; OK or Cancel."""
    dialog = wait_css(driver, "dialog#confirm[open]")
    assert_no_sideways_scroll(driver, "the confirmation")
    choice = driver.find_element(By.ID, "confirm-ok" if ok else "confirm-cancel")
    assert_tappable(driver, choice, f"the dialog's {choice.text}")
    shot(driver, name)
    choice.click()
    wait(driver, lambda d: not css(d, "dialog#confirm[open]"))
    return dialog


def test_on_a_phone_the_sessions_are_cards_with_export_and_delete(parleyd, app, phone):
    session, _ = record(parleyd, app, [("load", {"items": []}, app_screenshot([]))])
    app.close()   # an ended session: Delete is offered
    phone.get(parleyd.web + "/")
    selector = f'tr.session-row[data-id="{session["id"]}"]'
    wait(phone, lambda d: button(d, wait_css(d, selector), "Delete…").is_enabled(), message="Delete stays disabled")
    row = wait_css(phone, selector)
    delete = button(phone, row, "Delete…")
    assert_no_sideways_scroll(phone, "the sessions")
    label = phone.execute_script("return getComputedStyle(arguments[0], '::before').content", row.find_element(By.CSS_SELECTOR, "td.c-entries"))
    assert label == '"entries"', f"a card names its fields, not {label}"
    shot(phone, "sessions")

    export = button(phone, row, "Export")
    assert_tappable(phone, export, "Export")
    exported = phone.execute_script("return fetch(arguments[0]).then((r) => r.ok && r.headers.get('Content-Disposition'))", export.get_attribute("href"))
    assert exported and "attachment" in exported

    assert_tappable(phone, delete, "Delete…")
    delete.click()
    answer_dialog(phone, "delete_confirm")
    wait(phone, lambda d: not css(d, f'tr.session-row[data-id="{session["id"]}"]'), message="the session was not deleted")


def test_on_a_phone_a_session_and_an_entry_fit_and_replay_reaches_the_app(parleyd, app, phone):
    state = {"items": ["a rather long item that a person typed on a phone, and then some more of it"]}
    session, entries = record(parleyd, app, [
        ("load", {"items": []}, app_screenshot([])),
        ('add("a rather long item that a person typed on a phone, and then some more of it")', state, app_screenshot(["milk"])),
    ])
    phone.get(f'{parleyd.web}/sessions/{session["id"]}')
    wait_css(phone, ".tl-row[data-seq]")
    assert_no_sideways_scroll(phone, "a session's timeline")
    head = wait_css(phone, ".session-head")
    assert_tappable(phone, button(phone, head, "Export"), "the session's Export")
    shot(phone, "session")

    wait_css(phone, f'.tl-row[data-seq="{entries[1]["sequence"]}"]').click()
    wait_css(phone, ".tree .trow")
    wait(phone, lambda d: d.execute_script("const i = document.querySelector('img.screenshot'); return i && i.complete && i.naturalWidth > 0"))
    assert_no_sideways_scroll(phone, "an entry")
    shot(phone, "entry")
    replay = button(phone, phone, "Replay to app")
    assert_tappable(phone, replay, "Replay to app")
    assert_tappable(phone, button(phone, phone, "Replay to all…"), "Replay to all…")
    shot(phone, "entry_actions")
    replay.click()
    answer_dialog(phone, "replay_confirm")
    assert app.wait_for_replay(1) == b'{"items":["a rather long item that a person typed on a phone, and then some more of it"]}'


def test_on_a_phone_the_peers_are_cards(parleyd, app, phone, start_app):
    record(parleyd, app, [("load", {"n": 0})])
    start_app()
    phone.get(parleyd.web + "/peers")
    wait(phone, lambda d: len(css(d, "tr.peer-row.connected")) == 2)
    assert_no_sideways_scroll(phone, "the peers")
    shot(phone, "peers")


def test_on_a_phone_the_drawer_sets_and_invokes(parleyd, phone, start_app):
    app = start_app()
    phone.get(parleyd.web + "/drawers")
    switch = wait_css(phone, '.drawer-item[data-item="network.slow"] input')
    assert_no_sideways_scroll(phone, "the drawer")
    shot(phone, "drawer")

    start = app.mark()
    assert_tappable(phone, switch, "the switch")
    switch.click()
    assert app.wait_for(lambda e: e["event"] == "set" and e["item"] == "network.slow", "the set", start)["value"] is True
    theme = wait_css(phone, '.drawer-item[data-item="theme"] select')
    assert_tappable(phone, theme, "the theme's menu")
    Select(theme).select_by_value("dark")
    app.wait_for(lambda e: e["event"] == "set" and e["item"] == "theme", "the set of theme", start)

    reset = wait_css(phone, '.drawer-item[data-item="reset"] button')
    assert_tappable(phone, reset, "the reset action")
    start = app.mark()
    reset.click()
    answer_dialog(phone, "drawer_confirm")
    app.wait_for(lambda e: e["event"] == "invoked" and e["item"] == "reset", "the invocation", start)
    wait(phone, lambda d: d.find_element(By.CSS_SELECTOR, '.drawer-item[data-item="reset"] .drawer-message').text == "2 settings reset")
    assert_no_sideways_scroll(phone, "the drawer with a message")
