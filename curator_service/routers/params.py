"""Path and query parameters the routers share: every id and offset bounded to what both databases store
(PostgreSQL's INTEGER, :data:`~shared.api.schemas.DB_INT_MAX`), so an id out of range is a 422 naming it, never a
database error, and the bounds are in the OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from shared.api.schemas import DB_INT_MAX


def _path_id(noun: str) -> Any:
    return Path(ge=1, le=DB_INT_MAX, description=f"The {noun}'s id.")


def _filter(noun: str) -> Any:
    return Query(ge=1, le=DB_INT_MAX, description=f"Only what belongs to this {noun}.")


# Written out as aliases (not made by a function) so that type checkers read them as the types they are.
DatasetId = Annotated[int, _path_id("dataset")]
ReleaseId = Annotated[int, _path_id("release")]
KeyId = Annotated[int, _path_id("key")]
SessionId = Annotated[int, _path_id("session")]
QueryId = Annotated[int, _path_id("query")]
JobId = Annotated[int, _path_id("job")]
DatasetFilter = Annotated[int | None, _filter("dataset")]
ReleaseFilter = Annotated[int | None, _filter("release")]
Offset = Annotated[int, Query(ge=0, le=DB_INT_MAX, description="How many items to skip.")]
