"""The job engine's tests use the curator service's fixtures (apps on SQLite or PostgreSQL)."""

from tests.curator_service.conftest import client, database_url, make_client, make_settings  # noqa: F401
