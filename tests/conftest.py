import os

import pytest

from helpers import BIN, ROOT, tool  # noqa: F401

# `make test` runs pytest on two processes (pytest-xdist, one file per process at a time), which hand out the files
# in collection order. The files measured slowest on 2 cores (seconds, one process) go first, so that no long file
# starts last while the other process sits idle. Only the order changes; every test runs.
SLOW_FIRST = ["test_sweep.py",                   # ~110 s under load (the smoke tutorial since 2026-11-25)
              "reliability/test_preemption.py",  # ~120 s
              "test_tutorials.py",               # ~115 s
              "reliability/test_faults.py",      # ~90 s
              "test_sweep_ray.py",               # ~85 s
              "test_docs.py",                    # ~80 s
              "reliability/test_resume.py",      # ~75 s
              "test_explorer_browser.py",        # ~55 s
              "test_runs.py",                    # ~55 s
              "test_open_lab.py",                # ~30 s (JupyterLab in Chromium)
              "test_reproduce.py",               # ~20 s
              "test_own_sweep.py"]               # ~20 s


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    rank = {os.path.join(here, f): i for i, f in enumerate(SLOW_FIRST)}
    items.sort(key=lambda it: rank.get(str(it.path), len(SLOW_FIRST)))   # a stable sort: the order inside a file stays


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def env():
    e = dict(os.environ)
    e["PATH"] = str(BIN) + os.pathsep + e.get("PATH", "")
    return e
