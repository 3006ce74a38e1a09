"""The OpenAPI document (``/openapi.json``, read through ``/docs``): FastAPI's, plus what it cannot infer.

* ``x-roles`` on every operation, and a sentence in its description, from the role dependency its handler
  declares (:mod:`curator_service.routers.auth`): ``curator``, ``modeler``, or both (a modeler then sees only what
  its key may see). ``/health`` needs no token.
* The JSON registration body (:func:`curator_service.routers.datasets.add_registration_schema`).
* ``JobCreate.kind`` as the enum of the job kinds this server has.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from curator_service.routers import ROUTERS
from curator_service.routers.auth import authenticate, curator_only, modeler_only
from curator_service.routers.datasets import add_registration_schema
from curator_service.services.job_kinds import KINDS

ROLE_SENTENCES = {
    ("curator",): "Role: curator (the admin token or a curator key).",
    ("modeler",): "Role: modeler key (its query budget is charged; the admin token is refused).",
    ("curator", "modeler"): "Role: curator, or a modeler key (which sees only its own and in-scope objects; the "
                            "rest answers 404 as if it did not exist).",
}


def _calls(dependant: Dependant) -> set[Any]:
    found = set()
    for dependency in dependant.dependencies:
        found.add(dependency.call)
        found |= _calls(dependency)
    return found


def roles(route: APIRoute) -> tuple[str, ...]:
    """Who may call ``route``, from the role dependency its handler declares (empty: no token needed)."""
    calls = _calls(route.dependant)
    if curator_only in calls:
        return ("curator",)
    if modeler_only in calls:
        return ("modeler",)
    return ("curator", "modeler") if authenticate in calls else ()


def document(app: FastAPI) -> dict[str, Any]:
    """The service's OpenAPI document, with roles, the registration body and the job kinds."""
    result = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    add_registration_schema(result)
    for route in (r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)):
        who = roles(route)
        for method in route.methods or ():
            operation = result["paths"][route.path_format][method.lower()]
            operation["x-roles"] = list(who)
            operation["description"] = f"{operation.get('description', '').strip()}\n\n{ROLE_SENTENCES[who]}".strip()
    result["components"]["schemas"]["JobCreate"]["properties"]["kind"]["enum"] = sorted(KINDS)
    return result
