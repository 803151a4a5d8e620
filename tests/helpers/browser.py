"""Debian's headless Chromium driven by selenium, for the viewer's pages: one driver, and waits.

The driver's path is given, so Selenium Manager never runs (nor downloads anything). Without
Chromium or its driver the tests skip, saying what to install; under CI they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "apt-get install -y chromium chromium-driver"


@contextmanager
def headless_chromium() -> Iterator[WebDriver]:
    """A headless Chromium at 1280×900 with no proxy; quit on leaving."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        message = f"{' and '.join(missing)} not installed; install them with: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-proxy-server", "--window-size=1280,900"):  # fmt: skip
        options.add_argument(arg)
    browser = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()


def texts(driver: WebDriver, css: str) -> list[str]:
    """The text of every element ``css`` selects, in page order."""
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def navigate(driver: WebDriver, action: Callable[[], object]) -> None:
    """Do ``action`` (a click, a key) and wait until it has loaded another page, script run.

    The old page is marked, so the wait ends only on a new document (a stale element check
    races a navigation: chromedriver may answer "node does not belong to the document").
    """
    driver.execute_script("window.oldPage = true")
    action()
    WebDriverWait(driver, 10, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return !window.oldPage && document.readyState == 'complete'")
    )


def click(driver: WebDriver, element: WebElement) -> None:
    """Click ``element`` and wait for the page it leads to."""
    navigate(driver, element.click)
