"""The examples written into docs/api.rst run (the docstrings' own run with --doctest-modules)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[1] / "docs" / "api.rst"


def test_the_api_pages_examples_run() -> None:
    if not API.exists():
        pytest.skip("docs/api.rst is not in this checkout")
    result = doctest.testfile(str(API), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0, result
