"""Shared fixtures: where ../shared is, and small configs."""

import os
import pathlib

import pytest

SHARED = pathlib.Path(
    os.environ.get("MBAG_SHARED", pathlib.Path(__file__).resolve().parents[3] / "shared")
)


@pytest.fixture
def shared() -> pathlib.Path:
    if not (SHARED / "reference" / "golden").is_dir():
        pytest.skip(f"SKIPPED: the shared reference data is not at {SHARED}")
    return SHARED
