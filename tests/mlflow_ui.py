"""Drive the MLflow UI in headless Chromium (Debian's chromium + chromium-driver via selenium)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def browser_available() -> bool:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return False
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(store: Path, timeout: float = 90.0):
    """`mlflow server` over a SQLite store on a free loopback port; yields its base URL."""
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    process = subprocess.Popen(
        [str(mlflow), "server", "--backend-store-uri", f"sqlite:///{store}", "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start: {process.stdout.read()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def chromium(tmp: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--window-size=1400,1000", f"--user-data-dir={tmp}"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate(driver)
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
