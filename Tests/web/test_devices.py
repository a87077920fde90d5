"""Pairing in the web debugger's Peers page (docs/security.md) in headless Chromium, against a real parleyd and a
device of the test's own: Python's `ssl` with a certificate made by `openssl`, speaking the protocol from
docs/protocol.md §4.2. The request appears live with the code the device computes; Accept pairs it, Unpair takes it
back and closes its connection. Screenshots go to the artifacts folder."""
import shutil
import tempfile

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from parley_tools import wire
from parley_tools.browser import ARTIFACTS

TIMEOUT = 15


@pytest.fixture
def device():
    directory = tempfile.mkdtemp(prefix="parley-web-device-")
    yield wire.make_device(directory, "phone")
    shutil.rmtree(directory, ignore_errors=True)


def wait(driver, condition, message=""):
    return WebDriverWait(driver, TIMEOUT, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition, message)


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def click(driver, selector):
    """Clicks the element; one replaced between finding and clicking is found again (a stale click did not happen)."""
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector).click() or True, f"could not click {selector}")


def read_request(driver):
    """The first pairing request's code and text, or None while there is none."""
    requests = css(driver, ".pairing-request")
    if not requests:
        return None
    return {"code": requests[0].find_element(By.CSS_SELECTOR, ".pairing-code").text, "text": requests[0].text}


def ask_to_pair(parleyd, certificate, key):
    """Connects as the device and says hello; returns parleyd's fingerprint and its refusal's text."""
    conn, theirs = wire.connect_device(parleyd.port, certificate, key)
    try:
        wire.send_hello(conn, wire.make_hello_json(name="phone"))
        refusal = conn.expect_close(wire.CODE_IDS["pairing-requested"])
        return wire.device_fingerprint(theirs), refusal.text
    finally:
        conn.close()


def test_a_pairing_request_appears_live_with_its_code_and_accept_then_unpair(parleyd, browser, device):
    certificate, key, mine = device
    browser.get(parleyd.web + "/peers")
    wait(browser, lambda d: css(d, ".device-self .fingerprint"), "no fingerprint of this debugger")
    assert not css(browser, ".pairing-request")

    theirs, said = ask_to_pair(parleyd, certificate, key)
    code = wire.pairing_code(mine, theirs)
    assert code in said
    # The page was open before the request: it arrives by the live stream.
    # The page renders its lists again on every event, so an element found once may be replaced: each check reads
    # what it needs inside one wait, and the buttons are found afresh.
    shown = wait(browser, lambda d: read_request(d), "the request did not appear")
    assert shown["code"] == code
    assert "phone" in shown["text"] and wire.fingerprint_text(mine, 16) in shown["text"]
    assert wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".device-self .fingerprint").text) == wire.fingerprint_text(theirs, 16)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "devices_pairing_request.png"))

    click(browser, ".pairing-request button.accept")
    paired = f'.paired-device[data-fingerprint="{wire.fingerprint_text(mine)}"]'
    wait(browser, lambda d: css(d, paired), "the device was not listed as paired")
    assert not css(browser, ".pairing-request")
    assert parleyd.get("/api/devices")["paired"][0]["fingerprint"] == wire.fingerprint_text(mine)

    # Paired: the device gets in; the page says it is connected once asked again.
    conn, _ = wire.connect_device(parleyd.port, certificate, key)
    try:
        wire.handshake(conn, name="phone")
        conn.assert_alive()
        browser.refresh()
        wait(browser, lambda d: "connected" in d.find_element(By.CSS_SELECTOR, ".paired-device").text, "not shown connected")
        click(browser, ".paired-device button.unpair")
        wait(browser, lambda d: css(d, "dialog#confirm[open]"))
        click(browser, "#confirm-ok")
        conn.expect_close(wire.CODE_IDS["device-not-trusted"])
    finally:
        conn.close()
    wait(browser, lambda d: not css(d, ".paired-device"), "the device is still listed")
    browser.save_screenshot(str(ARTIFACTS / "devices_unpaired.png"))
