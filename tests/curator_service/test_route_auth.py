"""Every /v1 route declares a role, and every console page or form but the login's needs a logged-in curator: a
walk over ``app.routes`` fails on any route without its auth dependency.

The walk goes through FastAPI's included routers the way its OpenAPI generator does (``iter_route_contexts``), so a
route is seen with every dependency it is served with."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from curator_service.console.pages import console_api
from curator_service.routers.auth import ROLE_DEPENDENCIES


def _calls(dependant: Dependant) -> set:
    """Every callable a route depends on, at any depth."""
    found = {dependant.call}
    for sub in dependant.dependencies:
        found |= _calls(sub)
    return found


def v1_routes(app: FastAPI) -> list:
    return [route for route in iter_route_contexts(app.routes)
            if isinstance(route.original_route, APIRoute) and route.path.startswith("/v1")]


def unguarded_routes(app: FastAPI) -> list[str]:
    """``METHOD path`` of every /v1 route none of whose dependencies authenticates the caller."""
    return sorted(f"{','.join(sorted(route.methods))} {route.path}" for route in v1_routes(app)
                  if not _calls(route.dependant) & set(ROLE_DEPENDENCIES))


def test_every_v1_route_declares_a_role(client):
    assert len(v1_routes(client.app)) >= 25  # the walk sees the whole API, not an empty list
    assert unguarded_routes(client.app) == []


def test_the_walk_finds_a_route_without_one(client):
    """The negative control: a handler that forgot its role is reported by method and path."""

    @client.app.get("/v1/forgotten")
    def forgotten() -> dict:
        return {}

    assert unguarded_routes(client.app) == ["GET /v1/forgotten"]


# The console's own doors: the redirect to a page, the login form and its POST, and logout (which only drops the
# cookie).
CONSOLE_PUBLIC = {"GET /console", "GET /console/login", "POST /console/login", "POST /console/logout"}


def unguarded_console_routes(app: FastAPI) -> list[str]:
    """``METHOD path`` of every console route that is not a public door and does not call the API as the logged-in
    curator (``console_api``, which sends a visitor without a valid session cookie to the login form)."""
    routes = [route for route in iter_route_contexts(app.routes)
              if isinstance(route.original_route, APIRoute) and route.path.startswith("/console")]
    assert len(routes) >= 20  # the walk sees the console's pages and forms
    return sorted(name for route in routes
                  if (name := f"{','.join(sorted(route.methods))} {route.path}") not in CONSOLE_PUBLIC
                  and console_api not in _calls(route.dependant))


def test_every_console_page_and_form_needs_a_logged_in_curator(client):
    assert unguarded_console_routes(client.app) == []


def test_the_console_walk_finds_a_page_without_a_login(client):
    @client.app.get("/console/forgotten")
    def forgotten() -> dict:
        return {}

    assert unguarded_console_routes(client.app) == ["GET /console/forgotten"]
