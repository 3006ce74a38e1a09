"""Path and query parameters the routers share: every id and offset bounded to what both databases store
(PostgreSQL's INTEGER, :data:`~shared.api.schemas.DB_INT_MAX`), so an id out of range is a 422 naming it, never a
database error, and the bounds are in the OpenAPI document."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from shared.api.schemas import DB_INT_MAX


def _path_id(noun: str) -> object:
    return Annotated[int, Path(ge=1, le=DB_INT_MAX, description=f"The {noun}'s id.")]


def _filter(noun: str) -> object:
    return Annotated[int | None, Query(ge=1, le=DB_INT_MAX, description=f"Only what belongs to this {noun}.")]


DatasetId = _path_id("dataset")
ReleaseId = _path_id("release")
KeyId = _path_id("key")
SessionId = _path_id("session")
QueryId = _path_id("query")
JobId = _path_id("job")
DatasetFilter = _filter("dataset")
ReleaseFilter = _filter("release")
Offset = Annotated[int, Query(ge=0, le=DB_INT_MAX, description="How many items to skip.")]
