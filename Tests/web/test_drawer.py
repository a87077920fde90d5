"""The web debugger's Drawer view (docs/drawer.md, docs/web.md) in headless Chromium, against a real parleyd and an
app offering a drawer (scripts/interop/drawer_app.py, written from the protocol documents). What the app receives
is read from its event lines; nothing here sleeps and hopes. Screenshots go to the artifacts folder (conftest.py:
one per test at its end, and the named ones below); errors in the browser console fail a test."""

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from parley_tools.drawer_app import DrawerApp
from parley_tools.browser import ARTIFACTS, request_mark, requests_since, severe_console_entries, start_browser, stop_browser

TIMEOUT = 15


@pytest.fixture
def start_app(parleyd):
    apps = []

    def start(*arguments, name="Drawer Demo"):
        app = DrawerApp(parleyd.port, *arguments, name=name, timeout=TIMEOUT)
        apps.append(app)
        return app

    yield start
    for app in apps:
        app.stop()


@pytest.fixture
def drawer_app(start_app):
    return start_app()


def wait(driver, condition, timeout=TIMEOUT, message=""):
    return WebDriverWait(driver, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition, message)


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def wait_css(driver, selector, timeout=TIMEOUT):
    return wait(driver, lambda d: (css(d, selector) or [None])[0], timeout, f"no element matches {selector}")


def row(driver, item):
    return wait_css(driver, f'.drawer-app .drawer-item[data-item="{item}"]')


def control(driver, item, tag="*"):
    return wait_css(driver, f'.drawer-app .drawer-item[data-item="{item}"] .drawer-control {tag}')


def message(driver, item):
    return driver.find_element(By.CSS_SELECTOR, f'.drawer-item[data-item="{item}"] .drawer-message').text


def open_drawer(driver, parleyd):
    driver.get(parleyd.web + "/drawers")
    wait_css(driver, ".drawer-app .drawer-item")
    driver.execute_script("window.__sameDocument = true")


def replace_text(field, *keys):
    """Selects what the field holds and types over it (WebDriver's clear() would fire a change of its own)."""
    field.click()
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(*keys)


def screenshot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"drawer_{name}.png"))


def answer_dialog(driver, ok):
    """The page's confirmation (a <dialog>, not window.confirm): OK or Cancel; answers its title and text."""
    wait_css(driver, "dialog#confirm[open]")
    said = driver.find_element(By.ID, "confirm-title").text, driver.find_element(By.ID, "confirm-message").text
    driver.find_element(By.ID, "confirm-ok" if ok else "confirm-cancel").click()
    wait(driver, lambda d: not css(d, "dialog#confirm[open]"))
    return said


def app_sets(app, start):
    return [event for event in app.since(start) if event["event"] in ("set", "invoked", "refused")]


def expect_value(parleyd, app_name, item, value):
    """parleyd's drawer (GET /api/drawers) holds `value` for `item`."""
    drawers = parleyd.get("/api/drawers")["drawers"]
    drawer = next(d for d in drawers if d["peer"]["name"] == app_name)
    assert next(i for i in drawer["items"] if i["id"] == item).get("value") == value


# The tests


def test_the_page_lists_the_apps_drawer(parleyd, drawer_app, browser):
    browser.get(parleyd.web + "/")
    browser.find_element(By.CSS_SELECTOR, 'a[data-nav="drawers"]').click()
    wait(browser, lambda d: d.current_url.endswith("/drawers"))
    app = wait_css(browser, ".drawer-app")
    assert "active" in browser.find_element(By.CSS_SELECTOR, 'a[data-nav="drawers"]').get_attribute("class")
    assert browser.title.startswith("Drawer")
    assert app.find_element(By.CSS_SELECTOR, ".drawer-app-name").text == "Drawer Demo"
    sections = [element.text for element in app.find_elements(By.CSS_SELECTOR, ".drawer-section h3")]
    assert sections == ["NETWORK", "APPEARANCE"], sections  # shown upper-case; the unsectioned items come last, without a heading
    items = [element.get_attribute("data-item") for element in app.find_elements(By.CSS_SELECTOR, ".drawer-item")]
    assert items == ["network.slow", "latency", "theme", "greeting", "reset", "build"]

    switch = control(browser, "network.slow", "input")
    assert switch.get_attribute("type") == "checkbox" and switch.get_attribute("role") == "switch"
    assert not switch.is_selected()
    assert "Simulate a slow network" in row(browser, "network.slow").text
    theme = Select(control(browser, "theme", "select"))
    assert [option.text for option in theme.options] == ["Light", "Dark"]
    assert theme.first_selected_option.get_attribute("value") == "light"
    greeting = control(browser, "greeting", "input")
    assert greeting.get_attribute("type") == "text" and greeting.get_attribute("value") == "Hello"
    assert "64 characters" in row(browser, "greeting").text, "the text's limit is shown"
    latency = control(browser, "latency", "input")
    assert latency.get_attribute("type") == "number" and latency.get_attribute("value") == "0"
    assert (latency.get_attribute("min"), latency.get_attribute("max"), latency.get_attribute("step")) == ("0", "5000", "100")
    reset = control(browser, "reset", "button")
    assert reset.text == "Reset all settings…", "a destructive action says that it asks first"
    assert "danger" in reset.get_attribute("class")
    build = control(browser, "build", "output")
    assert build.text.startswith("drawer_app.py 1 (Python ")
    assert not row(browser, "build").find_elements(By.CSS_SELECTOR, "input, select, button"), "info is read-only"
    screenshot(browser, "listed")
    # The dark scheme (the system setting), for the picture.
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        control(browser, "network.slow", "input").click()
        wait(browser, lambda d: "busy" not in row(d, "network.slow").get_attribute("class") and control(d, "network.slow", "input").is_selected())
        screenshot(browser, "listed_dark")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert severe_console_entries(browser) == []


def test_no_drawer_says_so_and_one_arrives_live(parleyd, browser, start_app):
    browser.get(parleyd.web + "/drawers")
    empty = wait(browser, lambda d: next((p for p in css(d, ".drawer-empty") if p.is_displayed()), None), message="no 'no drawer' notice")
    assert "No connected app offers a drawer" in empty.text
    browser.execute_script("window.__sameDocument = true")
    app = start_app(name="Late App")
    wait(browser, lambda d: [e.text for e in css(d, ".drawer-app-name")] == ["Late App"], message="the new app's drawer did not appear")
    assert not empty.is_displayed()
    second = start_app(name="Another App")
    wait(browser, lambda d: [e.text for e in css(d, ".drawer-app-name")] == ["Another App", "Late App"], message="drawers are listed by name")
    # An app that leaves takes its drawer with it (an event with items: []).
    app.stop()
    wait(browser, lambda d: [e.text for e in css(d, ".drawer-app-name")] == ["Another App"], message="the drawer of an app that left stayed")
    second.stop()
    wait(browser, lambda d: empty.is_displayed(), message="no notice once every drawer is gone")
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"


def test_flipping_the_switch_reaches_the_app(parleyd, drawer_app, browser):
    open_drawer(browser, parleyd)
    start = drawer_app.mark()
    control(browser, "network.slow", "input").click()
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the set", start)
    assert (event["item"], event["value"]) == ("network.slow", True)
    wait(browser, lambda d: "busy" not in row(d, "network.slow").get_attribute("class"))
    assert control(browser, "network.slow", "input").is_selected()
    expect_value(parleyd, drawer_app.name, "network.slow", True)
    # And back.
    start = drawer_app.mark()
    control(browser, "network.slow", "input").click()
    assert drawer_app.wait_for(lambda e: e["event"] == "set", "the set", start)["value"] is False
    assert app_sets(drawer_app, start) == [drawer_app.since(start)[0]], "one set per click"


WATCH_SWITCH = """
    window.__seenAt = null;
    (function check() {
      const input = document.querySelector('.drawer-item[data-item="network.slow"] .drawer-control input');
      if (input && input.checked) window.__seenAt = Date.now(); else setTimeout(check, 2);
    })();"""


def test_a_change_made_in_one_page_shows_in_every_open_page(parleyd, drawer_app, browser):
    """Two people, two browsers: a switch flipped in one page appears in the other, from the same live event."""
    other, service = start_browser()
    try:
        open_drawer(browser, parleyd)
        open_drawer(other, parleyd)
        for page in (browser, other):
            page.execute_script(WATCH_SWITCH)
        watched = request_mark(other)
        start = drawer_app.mark()
        control(browser, "network.slow", "input").click()
        drawer_app.wait_for(lambda e: e["event"] == "set" and e["value"] is True, "the set", start)
        for page in (browser, other):
            wait(page, lambda d: d.execute_script("return window.__seenAt"), message="the change did not appear in every page")
        first, second = (page.execute_script("return window.__seenAt") for page in (browser, other))
        print(f"the other page showed the change {second - first:.0f} ms after the page it was made in")
        # The other page learnt of it from the live stream: it fetched nothing and was not reloaded.
        assert requests_since(other, watched) == [], "the other page fetched again instead of taking the live event"
        assert other.execute_script("return window.__sameDocument === true"), "the other page was reloaded"
        screenshot(other, "changed_in_another_page")
    finally:
        stop_browser(other, service)


def test_choosing_an_option_and_typing_a_text(parleyd, drawer_app, browser):
    open_drawer(browser, parleyd)
    start = drawer_app.mark()
    Select(control(browser, "theme", "select")).select_by_visible_text("Dark")
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the set of theme", start)
    assert (event["item"], event["value"]) == ("theme", "dark")

    start = drawer_app.mark()
    greeting = control(browser, "greeting", "input")
    replace_text(greeting, "Grüß <b>dich</b>", Keys.ENTER)
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the set of greeting", start)
    assert (event["item"], event["value"]) == ("greeting", "Grüß <b>dich</b>")
    # Leaving the field after Enter sends nothing more; editing and leaving it applies too.
    start = drawer_app.mark()
    greeting.send_keys(" again")
    browser.find_element(By.CSS_SELECTOR, ".page-head h1").click()  # focus elsewhere: the change applies on blur
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the set on leaving the field", start)
    assert event["value"] == "Grüß <b>dich</b> again"
    assert len(app_sets(drawer_app, start)) == 1

    start = drawer_app.mark()
    latency = control(browser, "latency", "input")
    replace_text(latency, "300", Keys.ENTER)
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the set of latency", start)
    assert (event["item"], event["value"]) == ("latency", 300)
    expect_value(parleyd, drawer_app.name, "theme", "dark")
    expect_value(parleyd, drawer_app.name, "latency", 300)
    screenshot(browser, "changed")


def test_an_out_of_range_number_shows_the_problem_and_the_app_sees_nothing(parleyd, drawer_app, browser):
    open_drawer(browser, parleyd)
    start = drawer_app.mark()
    latency = control(browser, "latency", "input")
    replace_text(latency, "9000", Keys.ENTER)
    wait(browser, lambda d: "failed" in row(d, "latency").get_attribute("class"), message="no problem shown")
    text = message(browser, "latency")
    assert "Bad request" in text and "outside" in text and "5000" in text, text
    wait(browser, lambda d: control(d, "latency", "input").get_attribute("value") == "0", message="the field did not go back to the drawer's value")
    screenshot(browser, "out_of_range")

    # Off the step.
    replace_text(latency, "150", Keys.ENTER)
    wait(browser, lambda d: "150" in message(d, "latency") and "step" in message(d, "latency"), message="no problem for an off-step number")
    # A text too long for the item (64 characters at most).
    greeting = control(browser, "greeting", "input")
    replace_text(greeting, "x" * 65, Keys.ENTER)
    wait(browser, lambda d: "64" in message(d, "greeting"), message="no problem for a text too long")
    wait(browser, lambda d: control(d, "greeting", "input").get_attribute("value") == "Hello")
    # The app received none of it: the next thing it sees is the valid value sent after them.
    latency = control(browser, "latency", "input")
    replace_text(latency, "200", Keys.ENTER)
    event = drawer_app.wait_for(lambda e: e["event"] == "set", "the valid set", start)
    assert (event["item"], event["value"]) == ("latency", 200)
    assert app_sets(drawer_app, start) == [event], "the app received a refused value"
    wait(browser, lambda d: message(d, "latency") == "", message="the problem stays after a change that worked")
    # The browser logs each refused request (400) as an error, and nothing else.
    severe = severe_console_entries(browser)
    assert severe and all("400" in entry["message"] and "/api/drawers/" in entry["message"] for entry in severe), severe


def test_an_app_that_refuses_shows_its_reason(parleyd, start_app, browser):
    app = start_app("--refuse", "greeting")
    open_drawer(browser, parleyd)
    start = app.mark()
    greeting = control(browser, "greeting", "input")
    replace_text(greeting, "Hi", Keys.ENTER)
    app.wait_for(lambda e: e["event"] == "refused", "its refusal", start)
    wait(browser, lambda d: "cannot be changed right now" in message(d, "greeting"), message="the app's reason is not shown")
    wait(browser, lambda d: control(d, "greeting", "input").get_attribute("value") == "Hello")
    screenshot(browser, "refused")
    severe = severe_console_entries(browser)
    assert all("409" in entry["message"] for entry in severe), severe


def test_invoking_the_action_shows_the_apps_message(parleyd, drawer_app, browser):
    open_drawer(browser, parleyd)
    control(browser, "network.slow", "input").click()
    Select(control(browser, "theme", "select")).select_by_value("dark")
    drawer_app.wait_for(lambda e: e["event"] == "set" and e["item"] == "theme", "the set of theme")
    start = drawer_app.mark()
    control(browser, "reset", "button").click()
    answer_dialog(browser, ok=True)
    event = drawer_app.wait_for(lambda e: e["event"] == "invoked", "the invocation", start)
    assert event == {**event, "item": "reset", "message": "2 settings reset"}
    wait(browser, lambda d: message(d, "reset") == "2 settings reset", message="the app's message is not shown")
    # The app reset its values itself (Changed): the controls follow.
    wait(browser, lambda d: not control(d, "network.slow", "input").is_selected(), message="the switch did not follow the app")
    wait(browser, lambda d: Select(control(d, "theme", "select")).first_selected_option.get_attribute("value") == "light")
    screenshot(browser, "invoked")


def test_a_destructive_action_asks_first_and_cancelling_sends_nothing(parleyd, drawer_app, browser):
    """drawer_app.py declares reset destructive: the page asks (in the page, styled, naming the action and the
    app) before it invokes it; Cancel sends nothing, OK invokes it once."""
    open_drawer(browser, parleyd)
    start = drawer_app.mark()
    mark = request_mark(browser)
    control(browser, "reset", "button").click()
    wait_css(browser, "dialog#confirm[open]")
    ok = browser.find_element(By.ID, "confirm-ok")
    assert ok.text == "Reset all settings" and "danger" in ok.get_attribute("class")
    screenshot(browser, "destructive_confirm")
    title, text = answer_dialog(browser, ok=False)
    assert title == "Reset all settings?"
    assert "Drawer Demo" in text and "(reset)" in text and "cannot be undone" in text, text
    # What the app receives comes in order: a switch flipped after the cancel arrives with nothing before it.
    control(browser, "network.slow", "input").click()
    drawer_app.wait_for(lambda e: e["event"] == "set", "the set after the cancel", start)
    assert [e["event"] for e in app_sets(drawer_app, start)] == ["set"], "the cancelled action reached the app"
    assert not [path for path in requests_since(browser, mark) if path.endswith("/invoke")], "the page asked parleyd to invoke"
    assert message(browser, "reset") == ""

    start = drawer_app.mark()
    control(browser, "reset", "button").click()
    answer_dialog(browser, ok=True)
    drawer_app.wait_for(lambda e: e["event"] == "invoked", "the invocation", start)
    wait(browser, lambda d: message(d, "reset") == "1 setting reset", message="the app's message is not shown")
    assert [e["event"] for e in app_sets(drawer_app, start)] == ["invoked"], "one invocation for one OK"


def test_an_action_the_app_refuses_shows_its_reason(parleyd, start_app, browser):
    app = start_app("--refuse", "reset")
    open_drawer(browser, parleyd)
    start = app.mark()
    control(browser, "reset", "button").click()
    answer_dialog(browser, ok=True)
    app.wait_for(lambda e: e["event"] == "refused" and e["item"] == "reset", "its refusal", start)
    wait(browser, lambda d: "reset cannot be run right now" in message(d, "reset"), message="the app's reason is not shown")
    assert "failed" in row(browser, "reset").get_attribute("class")
    assert control(browser, "reset", "button").is_enabled(), "the button can be pressed again"
    screenshot(browser, "action_refused")
    severe = severe_console_entries(browser)
    assert all("409" in entry["message"] for entry in severe), severe


def test_a_change_the_app_makes_appears_live_without_stealing_focus(parleyd, start_app, browser):
    app = start_app("--change-after", "4", "theme=dark", "--change-after", "4", "greeting=Howdy", "--change-after", "4", "network.slow=true")
    open_drawer(browser, parleyd)
    assert not [e for e in app.since(0) if e["event"] == "changed"], "the app changed its values before the page was open; the test needs a longer delay"
    assert Select(control(browser, "theme", "select")).first_selected_option.get_attribute("value") == "light"
    # Someone is typing in the greeting field when the app changes it.
    greeting = control(browser, "greeting", "input")
    greeting.click()
    greeting.send_keys(Keys.END, " the")
    browser.execute_script("""
        window.__seenAt = null;
        (function check() {
          const select = document.querySelector('.drawer-item[data-item="theme"] select');
          if (select && select.value === 'dark') window.__seenAt = Date.now(); else setTimeout(check, 2);
        })();""")
    watched = request_mark(browser)
    changed = app.wait_for(lambda e: e["event"] == "changed" and e["item"] == "theme", "its own change", timeout=20)
    wait(browser, lambda d: d.execute_script("return window.__seenAt"), message="the app's change did not appear")
    latency = browser.execute_script("return window.__seenAt") - changed["time"] * 1000
    print(f"the app's change shown {latency:.0f} ms after the app sent it")
    assert not [path for path in requests_since(browser, watched) if path.startswith("/api/drawers")], \
        "the page fetched the drawers again instead of taking the live event"
    wait(browser, lambda d: control(d, "network.slow", "input").is_selected())
    assert browser.execute_script("return window.__sameDocument === true"), "the page was reloaded"
    # The field being edited kept the focus and what was typed.
    assert browser.switch_to.active_element == greeting
    assert greeting.get_attribute("value") == "Hello the"
    screenshot(browser, "changed_by_app")
    # Escape gives the field the drawer's value, which is now the app's.
    greeting.send_keys(Keys.ESCAPE)
    wait(browser, lambda d: greeting.get_attribute("value") == "Howdy")
    assert not [e for e in app.since(0) if e["event"] == "set"], "nothing was sent to the app"


def test_remote_text_is_shown_as_text(parleyd, start_app, browser):
    hostile = "<img src=x onerror=window.pwned=1>"
    start_app("--change-after", "0.2", f"greeting={hostile}", name="<b>bold</b> app")
    open_drawer(browser, parleyd)
    assert wait_css(browser, ".drawer-app-name").text == "<b>bold</b> app"
    wait(browser, lambda d: control(d, "greeting", "input").get_attribute("value") == hostile)
    assert not css(browser, ".drawer-app b, .drawer-app img")
    assert browser.execute_script("return window.pwned === undefined")
