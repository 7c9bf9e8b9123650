"""Fixtures of the Python package's tests (test/python/run.sh runs them
with PYTHONPATH=BUILD/python and ARRAYC_BUILD=BUILD, ARRAYC_SOURCE=SOURCE)."""
import os

import pytest

BUILD = os.environ.get("ARRAYC_BUILD", os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "build"))
SOURCE = os.environ.get("ARRAYC_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def build():
    return os.path.abspath(BUILD)


@pytest.fixture
def source():
    return os.path.abspath(SOURCE)
