"""A real headless Chromium (Debian's `chromium`, driven by playwright): the `browser`
fixture, registered for every test in tests/conftest.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, async_playwright

CHROMIUM = "/usr/bin/chromium"
HAVE_CHROMIUM = Path(CHROMIUM).exists()
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def browser() -> AsyncIterator[BrowserContext]:
    if not HAVE_CHROMIUM:
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (./scripts/test does)")
    profile = tempfile.mkdtemp(prefix="sb-chromium-")
    try:
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=ARGS, headless=True
            )
            try:
                yield context
            finally:
                await context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
