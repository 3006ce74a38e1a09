"""The OpenAPI document is well-formed, lists every endpoint of docs/design.md §5 and documents the error model."""

from __future__ import annotations

ENDPOINTS = {
    ("get", "/health"), ("get", "/ready"), ("get", "/v1/sessions/{session_id}/notes"),
    ("post", "/v1/datasets"), ("get", "/v1/datasets"), ("get", "/v1/datasets/{dataset_id}"),
    ("get", "/v1/datasets/{dataset_id}/row-order"), ("post", "/v1/datasets/{dataset_id}/budget"),
    ("post", "/v1/datasets/{dataset_id}/releases"), ("post", "/v1/datasets/{dataset_id}/plan"),
    ("put", "/v1/datasets/{dataset_id}/plausible-range"),
    ("get", "/v1/releases"), ("get", "/v1/releases/{release_id}"), ("get", "/v1/releases/{release_id}/inputs"),
    ("post", "/v1/releases/{release_id}/audits/reconstruction"),
    ("post", "/v1/keys"), ("get", "/v1/keys"), ("delete", "/v1/keys/{key_id}"),
    ("post", "/v1/releases/{release_id}/sessions"), ("get", "/v1/sessions"), ("get", "/v1/sessions/{session_id}"),
    ("post", "/v1/sessions/{session_id}/queries"), ("get", "/v1/sessions/{session_id}/queries"),
    ("post", "/v1/sessions/{session_id}/close"), ("post", "/v1/sessions/{session_id}/reopen"),
    ("get", "/v1/sessions/{session_id}/lab-queries"),
    ("get", "/v1/keys/me/policy"), ("get", "/v1/keys/{key_id}/policy"), ("put", "/v1/keys/{key_id}/policy"),
    ("get", "/v1/queries"), ("post", "/v1/queries/{query_id}/answer"), ("post", "/v1/queries/{query_id}/correct"),
    ("post", "/v1/queries/{query_id}/cannot-measure"), ("put", "/v1/datasets/{dataset_id}/identifier-column"),
    ("get", "/v1/datasets/{dataset_id}/worklist"), ("post", "/v1/datasets/{dataset_id}/answers"),
    ("post", "/v1/datasets/{dataset_id}/answers/csv"),
    ("get", "/v1/ledger"), ("get", "/v1/audit"),
    ("post", "/v1/jobs"), ("get", "/v1/jobs"), ("get", "/v1/jobs/{job_id}"), ("post", "/v1/jobs/{job_id}/cancel"),
}


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_openapi_lists_every_endpoint_with_resolvable_schemas(client):
    document = client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    listed = {(method, path) for path, operations in document["paths"].items() for method in operations}
    assert listed == ENDPOINTS
    schemas = document["components"]["schemas"]
    for ref in set(_refs(document)):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    registration = document["paths"]["/v1/datasets"]["post"]["requestBody"]["content"]
    assert set(registration) == {"multipart/form-data", "application/json"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation.get("summary"), (method, path)
            if path not in ("/health", "/ready"):  # probes: no authentication
                assert "401" in operation["responses"] and "422" in operation["responses"], (method, path)
    assert set(schemas["ErrorBody"]["required"]) == {"detail", "code"}
    docs = client.get("/docs")
    assert docs.status_code == 200 and "cdn" not in docs.text.lower()  # air-gapped: assets from the package
    assert client.get("/redoc").status_code == 404  # FastAPI's ReDoc page would load its script from a CDN


def test_every_public_constant_a_release_needs_says_it_is_fixed_without_looking_at_the_data(client):
    """Clip ranges, the DP-PCA norm bound and the planner's width are privacy parameters like the scaling: a value
    read off the table would leak it, so the reference must say so where the field is documented."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model, field in (("MeasurementsSpec", "clip"), ("PcaSpec", "clip_norm"), ("PlanRequest", "width")):
        description = schemas[model]["properties"][field]["description"]
        assert "Public, and fixed without looking at the data, like the scaling" in description, (model, field)
    assert "fixed without looking at the data" in schemas["ScalingSpec"]["description"]
