"""Headless Chromium for the HTML report's tests: Debian's chromium driven by Selenium through Debian's
chromedriver (no browser download); the ``browser`` fixture is in conftest.py."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def open_page(d, url: str) -> None:
    d.get_log("browser")  # what an earlier page logged is not this page's
    d.get("about:blank")
    d.get(url)
    WebDriverWait(d, 10).until(lambda d: d.execute_script("return document.readyState") == "complete")


def errors(d) -> list[dict]:
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def listed(d) -> list[str]:
    """The pids of the family list's rows, in their order."""
    return [r.get_attribute("data-pid") for r in d.find_elements(By.CSS_SELECTOR, "#family-list tbody tr")]


def shown_attempts(column) -> dict[tuple[str, int], str]:
    """(target, k) -> the verdict a student's column shows, every answer opened (and its LaTeX typeset)."""
    for summary in column.find_elements(By.CSS_SELECTOR, ".attempt summary"):
        summary.click()
    seen = {}
    for block in column.find_elements(By.CSS_SELECTOR, ".target-block"):
        for a in block.find_elements(By.CSS_SELECTOR, ".attempt"):
            head = a.find_element(By.TAG_NAME, "summary").text
            k = int(re.match(r"k=(\d+)", head).group(1))
            verdict = ("call failed" if "call failed" in head else "UNGRADED" if "UNGRADED" in head
                       else "NOT_ACCEPT" if "NOT_ACCEPT" in head else "ACCEPT")
            seen[(block.get_attribute("data-target"), k)] = verdict + (" truncated" if "truncated" in head else "")
    return seen
