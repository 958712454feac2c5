import os

import pytest

from helpers import BIN, ROOT, tool  # noqa: F401


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def env():
    e = dict(os.environ)
    e["PATH"] = str(BIN) + os.pathsep + e.get("PATH", "")
    return e
