"""`context-inspector serve`: the same app in a browser, on the loopback interface only.

The server is started on a free port of 127.0.0.1 and checked as a browser would use it: the page
names the app and its websocket, and the websocket answers a ping and streams the app's screen
(the sample's file name in its header). Bounded in time; the server is stopped at the end.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT

aiohttp = pytest.importorskip("aiohttp", reason="the serve extra (textual-serve, aiohttp) is not installed")
pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")

SAMPLE = ROOT / "inspector" / "samples" / "short-session.jsonl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _page(url: str, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return str(r.read().decode("utf-8"))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


async def _screen(url: str, seconds: float) -> tuple[list[str], bytes]:
    """What the websocket sends within `seconds`: its text answers and the screen's bytes."""
    texts: list[str] = []
    screen = b""
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.send_json(["ping", "issue-27"])
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (texts and b"short-session.jsonl" in screen):
            try:
                msg = await ws.receive(timeout=max(0.1, end - time.monotonic()))
            except TimeoutError:
                break
            if msg.type == aiohttp.WSMsgType.TEXT:
                texts.append(msg.data)
            elif msg.type == aiohttp.WSMsgType.BINARY:
                screen += msg.data
            else:
                break
    return texts, screen


def test_serve_gives_the_app_to_a_browser_on_loopback(tmp_path: Path) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "inspector", "serve", str(SAMPLE), "--port", str(port)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        page = _page(f"http://127.0.0.1:{port}/", time.monotonic() + 60)
        assert "<title>context-inspector</title>" in page or "context-inspector" in page
        assert f"ws://127.0.0.1:{port}/ws" in page  # the websocket, on the loopback address
        texts, screen = asyncio.run(_screen(f"http://127.0.0.1:{port}/ws?width=120&height=40", 60))
        assert '["pong", "issue-27"]' in texts
        assert screen.startswith(b"\x1b[?1049h")  # the app took the (browser's) screen
        assert b" short-session.jsonl " in screen  # the header of the main screen, drawn for the browser
        # bound to 127.0.0.1 only: another address of this machine does not answer
        with socket.socket() as s:
            s.settimeout(2)
            assert s.connect_ex(("127.0.0.2", port)) != 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_serve_checks_its_arguments_first(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inspector", "serve", str(tmp_path / "missing.jsonl")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"context-inspector: no such file or folder: {tmp_path / 'missing.jsonl'}\n"
    done = subprocess.run(
        [sys.executable, "-m", "inspector", "serve", str(SAMPLE), "--policy", "bogus"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2 and "unknown policy 'bogus'" in done.stderr
