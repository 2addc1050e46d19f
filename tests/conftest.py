"""Shared fixtures. Tests never reach the network: litellm uses its bundled cost map."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")

try:
    from hypothesis import settings as hypothesis_settings
except ImportError:  # a dev dependency: without it the property tests are not collected anyway
    pass
else:
    # the same examples on every run and every machine: a property test that fails, fails again
    # (HYPOTHESIS_PROFILE=explore searches afresh, for a local hunt)
    hypothesis_settings.register_profile("deterministic", derandomize=True, database=None)
    hypothesis_settings.register_profile("explore", derandomize=False)
    hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ``../shared`` folder beside the repo; tests using it skip cleanly without it."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture
def tmp_cache(tmp_path: Path) -> Path:
    return tmp_path / "cache.sqlite"
