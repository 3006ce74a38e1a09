"""Fixtures shared by the whole suite."""

import os

import pytest

from shared.datasets.paths import DatasetUnavailable, data_file


@pytest.fixture
def shared_data_file():
    """Returns a function that finds a real dataset file, skipping the test with a clear message when absent."""

    def find(name: str):
        try:
            return data_file(name)
        except DatasetUnavailable as exc:
            pytest.skip(str(exc))

    return find


@pytest.fixture
def postgres_url():
    """URL of a real PostgreSQL server for the storage conformance suite (set by .ci/run)."""
    url = os.environ.get("POBO_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("POBO_TEST_POSTGRES_URL is not set; .ci/run starts a PostgreSQL server and sets it")
    return url
