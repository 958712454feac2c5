import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture
def root():
    return ROOT


def tool(name: str) -> str:
    "Path of a console script of this environment (nbdev_export, contrastive-nb, ...)."
    p = BIN / name
    return str(p) if p.exists() else name


@pytest.fixture
def env():
    e = dict(os.environ)
    e["PATH"] = str(BIN) + os.pathsep + e.get("PATH", "")
    return e
