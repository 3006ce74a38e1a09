"""A real curator (``pobo-curator serve`` on loopback) and a real browser (Debian's Chromium, headless, driven by
Selenium through Debian's chromedriver: nothing is downloaded) for the console's tests.

Screenshots of every page a test visits go to ``$POBO_SCREENSHOT_DIR`` (the CI's artefacts; the good ones are
committed under docs/screenshots/), else to pytest's temporary directory. Without Chromium the tests skip with
a message, except on CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from curator_service.testing import LocalCurator
from tests.conftest import missing_on_ci

CHROMIUM = os.environ.get("POBO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("POBO_CHROMEDRIVER", "/usr/bin/chromedriver")


def _browser_missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            return f"{path} is not installed (apt-get install -y chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    return None


@pytest.fixture(scope="session")
def console_curator(tmp_path_factory, job_cluster) -> Iterator[LocalCurator]:
    # The tests refuse bad tokens and replayed cookies from this one address; the back-off has tests of its own.
    server = LocalCurator(tmp_path_factory.mktemp("console-curator"),
                          env={"POBO_AUTH_FAILURES_ALLOWED": "1000"}).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    chosen = os.environ.get("POBO_SCREENSHOT_DIR")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("console-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="session")
def chromium():
    missing = _browser_missing()
    if missing:
        missing_on_ci(f"the console's browser tests need Chromium: {missing}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100",
                     "--disable-gpu", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def replaced(element) -> bool:
    """Whether ``element`` has left the document (the next page replaced it). Chromium answers a query on a node of
    a page being replaced either as stale or, mid-navigation, with an inspector error saying the node no longer
    belongs to the document: both mean gone."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


class ConsoleBrowser:
    """The browser on one curator's console: go to pages, fill forms, read what they show, take screenshots."""

    def __init__(self, driver, curator: LocalCurator, screenshots: Path) -> None:
        self.driver, self.curator, self.screenshots = driver, curator, screenshots
        self.logged_in_with: str | None = None  # the token of the last login that opened a session

    def open(self, path: str) -> None:
        self.driver.get(self.curator.url + path)

    def by_id(self, element_id: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.ID, element_id)

    def all(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def one(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def fill(self, values: dict[str, str]) -> None:
        """Types each value into the input or picks it in the select with that id."""
        from selenium.webdriver.support.ui import Select

        for element_id, value in values.items():
            element = self.by_id(element_id)
            if element.tag_name == "select":
                Select(element).select_by_value(value)
            elif element.get_attribute("type") == "datetime-local":  # typing into it depends on the locale
                self.driver.execute_script("arguments[0].value = arguments[1]", element, value)
            else:
                element.clear()
                element.send_keys(value)

    def click(self, element_id: str) -> None:
        self.by_id(element_id).click()

    def submit(self, button_id: str) -> None:
        """Clicks a form's button and waits until the next page has replaced this one."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        page = self.driver.find_element(By.TAG_NAME, "html")
        self.by_id(button_id).click()
        WebDriverWait(self.driver, 60).until(lambda driver: replaced(page))

    def flash(self) -> str:
        return self.by_id("flash").text

    def shot(self, name: str, max_height: int = 4000) -> Path:
        """A screenshot of the current page, its full height up to ``max_height`` pixels."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1400, max(900, min(int(height) + 40, max_height)))
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(1400, 1100)
        return path

    def log_in(self, token: str) -> None:
        self.open("/console/login")
        self.fill({"token": token})
        self.submit("login")
        self.logged_in_with = token if self.driver.current_url.endswith("/console/datasets") else None

    def session_cookie(self) -> str | None:
        """The value of the console's session cookie (a session id), None when the browser holds none."""
        cookie = self.driver.get_cookie("pobo_console")
        return cookie["value"] if cookie else None

    def resources(self) -> list[str]:
        """Every URL the current page loaded (scripts, styles, images, XHR), from the browser's own timing API."""
        return self.driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")


@pytest.fixture(scope="session")
def console(chromium, console_curator, screenshot_dir) -> ConsoleBrowser:
    browser = ConsoleBrowser(chromium, console_curator, screenshot_dir)
    login = httpx.get(f"{console_curator.url}/console/login", timeout=60)  # a loaded machine answers slowly
    assert login.status_code == 200, "the console is not mounted"
    return browser


@pytest.fixture
def admin_console(console) -> ConsoleBrowser:
    """The console logged in with the admin token."""
    if console.logged_in_with != console.curator.admin_token or console.session_cookie() is None:
        console.log_in(console.curator.admin_token)
    return console
