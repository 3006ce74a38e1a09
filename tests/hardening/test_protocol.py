"""HTTP done by the book (405 with ``Allow``, 401 with ``WWW-Authenticate``), and an OpenAPI document
that says for every operation what it does, who may call it and the bounds of every integer."""

from __future__ import annotations

import pytest

INT32_MAX = 2**31 - 1


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    from fastapi.testclient import TestClient

    from curator_service.app import create_app
    from curator_service.settings import Settings

    settings = Settings.from_env({}, data_dir=tmp_path_factory.mktemp("openapi"), admin_token="0123456789abcdef" * 2)
    with TestClient(create_app(settings)) as client:
        return client.get("/openapi.json").json()


def operations(document):
    for path, items in document["paths"].items():
        for method, operation in items.items():
            yield method, path, operation


def test_405_names_the_allowed_methods(connect):
    client = connect()
    response = client.put("/v1/datasets")
    assert response.status_code == 405 and "method" in response.json()["detail"]
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}
    response = client.patch("/v1/keys/1")
    assert response.status_code == 405 and response.headers["Allow"] == "DELETE"


def test_every_405_allows_exactly_the_methods_its_path_has():
    """Walks every route: a method the path does not have is a 405 whose ``Allow`` names the path's methods, and
    no other route's (``PUT /v1/keys/me/policy`` used to reach ``PUT /v1/keys/{key_id}/policy``: a 422, and a
    405 there named PUT)."""
    import re
    import tempfile

    from fastapi.routing import iter_route_contexts
    from fastapi.testclient import TestClient

    from curator_service.app import create_app
    from curator_service.errors import HTTP_METHODS
    from curator_service.settings import Settings

    app = create_app(Settings.from_env({}, data_dir=tempfile.mkdtemp(), admin_token="0123456789abcdef" * 2))
    methods_by_path: dict[str, set[str]] = {}
    for route in iter_route_contexts(app.routes):  # through the included routers, as the OpenAPI generator walks
        if getattr(route, "methods", None):  # not the console's static files
            methods_by_path.setdefault(route.path, set()).update(route.methods)
    assert {"/v1/keys/me/policy", "/v1/datasets", "/health"} <= {re.sub(r":\w+}", "}", p) for p in methods_by_path}
    with TestClient(app) as client:
        for path, methods in methods_by_path.items():
            url = re.sub(r"\{[^}]+\}", "1", path)
            for method in sorted(set(HTTP_METHODS) - methods - {"HEAD"}):
                response = client.request(method, url, headers={"Authorization": "Bearer x"})
                assert response.status_code == 405, (method, url, response.status_code)
                allowed = set(response.headers["Allow"].replace(" ", "").split(","))
                assert allowed == methods, (method, url, allowed, methods)


def test_401_says_how_to_authenticate(connect):
    anonymous = connect(token=None)
    for response in (anonymous.get("/v1/releases"), anonymous.get("/v1/ledger", headers={"Authorization": "Bearer x"})):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_every_operation_has_a_description_and_its_roles(document):
    for method, path, operation in operations(document):
        assert len(operation.get("description", "").split()) >= 5, (method, path)
        if path in ("/health", "/ready"):  # probes: no authentication, no role
            continue
        roles = operation.get("x-roles")
        assert roles and set(roles) <= {"curator", "modeler", "owner"}, (method, path, roles)
        assert "Role" in operation["description"], (method, path)


def test_every_integer_is_bounded(document):
    for method, path, operation in operations(document):
        for parameter in operation.get("parameters", []):
            schema = parameter["schema"]
            if schema.get("type") == "integer" or any(s.get("type") == "integer" for s in schema.get("anyOf", [])):
                bounded = [s for s in [schema, *schema.get("anyOf", [])] if s.get("type") == "integer"]
                assert all("maximum" in s and "minimum" in s for s in bounded), (method, path, parameter)
    schemas = document["components"]["schemas"]
    bodies = {ref for _, _, operation in operations(document)
              for content in operation.get("requestBody", {}).get("content", {}).values()
              for ref in _refs(content.get("schema", {}))}
    assert {"ReleaseCreate", "QueryRequest", "JobCreate", "DatasetFromPath"} <= bodies
    for name in bodies:
        for field, schema in integer_fields(schemas, schemas[name]):
            assert "maximum" in schema and "minimum" in schema, (name, field, schema)
    dim = [s for s in schemas["ReleaseCreate"]["properties"]["dim"]["anyOf"] if s.get("type") == "integer"][0]
    assert dim["minimum"] == 1
    ids = [p for _, path, op in operations(document) for p in op.get("parameters", []) if p["in"] == "path"]
    assert ids and all(p["schema"]["minimum"] == 1 and p["schema"]["maximum"] == INT32_MAX for p in ids)


def _refs(schema):
    """Model names a request body's schema refers to directly."""
    if "$ref" in schema:
        yield schema["$ref"].rsplit("/", 1)[1]
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        yield from _refs(sub)


def integer_fields(schemas, schema, where=""):
    """(field path, schema) of every integer in a model, through lists, unions and references."""
    if "$ref" in schema:
        yield from integer_fields(schemas, schemas[schema["$ref"].rsplit("/", 1)[1]], where)
        return
    if schema.get("type") == "integer":
        yield where, schema
    for key, sub in schema.get("properties", {}).items():
        yield from integer_fields(schemas, sub, f"{where}.{key}")
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        yield from integer_fields(schemas, sub, where)
    if "items" in schema:
        yield from integer_fields(schemas, schema["items"], f"{where}[]")
