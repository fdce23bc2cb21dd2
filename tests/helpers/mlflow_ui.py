"""Drive the MLflow UI in headless Chromium (Debian's chromium + chromium-driver via selenium)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
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
def loopback_server(
    command: list[str], ready_path: str, timeout: float = 90.0, env: dict | None = None, log=None
):
    """Start `command` with {port} filled in by a free loopback port, wait until GET `ready_path`
    answers 200, yield the base URL, and stop the process on the way out. `log`: a file (w+) for its
    output, for the caller to read."""
    port = free_port()
    # its log goes to a file, never a pipe: a server logs a line per request, and once a pipe nobody
    # reads holds 64 KB the server blocks on its next write and stops answering
    log = log or tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [part.format(port=port) for part in command],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}{ready_path}", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"{command[1]} {command[2]} did not start: {log.read()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def mlflow_server(store: Path, timeout: float = 90.0):
    """`mlflow server` over a SQLite store on a free loopback port; yields its base URL."""
    mlflow = Path(sys.executable).parent / "mlflow"
    command = [
        str(mlflow),
        "server",
        "--backend-store-uri",
        f"sqlite:///{store}",
        "--host",
        "127.0.0.1",
        "--port",
        "{port}",
        "--workers",
        "1",
    ]
    return loopback_server(command, "/health", timeout)


@contextlib.contextmanager
def tinytf_ui(store: Path, timeout: float = 90.0):
    """`tinytf ui` (what `make ui` runs) over a SQLite store on a free loopback port; yields the
    base URL and the runs page's link it printed."""
    import os
    import re

    command = [sys.executable, "-m", "tinytf.cli", "ui", "--backend-store-uri", f"sqlite:///{store}"]
    command += ["--host", "127.0.0.1", "--port", "{port}"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    with (
        tempfile.TemporaryFile(mode="w+") as log,
        loopback_server(command, "/health", timeout, env, log) as url,
    ):
        log.seek(0)
        printed = re.search(r"the runs of experiment '[^']+': (\S+)", log.read())
        assert printed, "tinytf ui printed no runs page"
        yield url, printed.group(1)


@contextlib.contextmanager
def chromium(tmp: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp}",
    ):
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
