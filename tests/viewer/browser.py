"""Headless Chromium for the HTML report's tests: Debian's chromium driven by Selenium through Debian's
chromedriver (no browser download); the ``browser`` fixture is in conftest.py."""

from __future__ import annotations

from selenium.webdriver.support.ui import WebDriverWait


def open_page(d, url: str) -> None:
    d.get_log("browser")  # what an earlier page logged is not this page's
    d.get("about:blank")
    d.get(url)
    WebDriverWait(d, 10).until(lambda d: d.execute_script("return document.readyState") == "complete")


def errors(d) -> list[dict]:
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
