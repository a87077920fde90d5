"""Fixtures of the web debugger's browser tests: one headless Chromium for the run, a fresh parleyd per test (its
own data directory, in its own process group, stopped at teardown), and the app in the original framing."""
import re

import pytest

from parley_tools.browser import ARTIFACTS, OriginalApp, Parleyd, severe_console_entries, start_browser, stop_browser


def pytest_configure(config):
    config.addinivalue_line("markers", "console_errors_expected: the test provokes errors the browser logs (e.g. a 404)")


@pytest.fixture(scope="session")
def chromium():
    driver, service = start_browser()
    try:
        yield driver
    finally:
        stop_browser(driver, service)


@pytest.fixture
def parleyd_config():
    """Overridden by tests that need a configuration file (e.g. named action filters)."""
    return None


@pytest.fixture
def parleyd(parleyd_config):
    daemon = Parleyd(config=parleyd_config)
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def app(parleyd):
    connection = OriginalApp(parleyd.port)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def browser(chromium, parleyd, request):
    """The browser, signed in to this parleyd as `parleyctl web` prints its URL (so the page may change things),
    its console emptied; at teardown a screenshot of the page goes to the artifacts folder, the page is left before
    parleyd stops (so the live stream's reconnects are not logged into the next test), and errors in the console
    fail the test."""
    chromium.get(parleyd.sign_in_url())
    chromium.get("about:blank")
    chromium.get_log("browser")
    yield chromium
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    try:
        chromium.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    finally:
        severe = severe_console_entries(chromium)
        chromium.get("about:blank")
    if severe and request.node.get_closest_marker("console_errors_expected") is None:
        pytest.fail("the browser console has errors:\n" + "\n".join(entry["message"] for entry in severe))
