"""The fuzzer's reading of refusals: a schema-valid request refused for what the data says is not a finding; a
refusal by the request model itself, or one without docs/design.md §5's error body, is."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fuzz_api():
    spec = importlib.util.spec_from_file_location("fuzz_api_under_test", ROOT / "tools" / "fuzz_api.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def body(detail, code="validation_error") -> str:
    return json.dumps({"detail": detail, "code": code})


def test_data_dependent_refusals_are_told_apart_by_their_code(fuzz_api):
    refused = fuzz_api.refused_for_data
    assert refused(422, body("'offset' 2147483646 is past the end; the release has 40 rows")) == "validation_error"
    overdraw = body("the release would overdraw the budget of dataset 1", "budget_exceeded")
    assert refused(409, overdraw) == "budget_exceeded"
    # The request model refusing what the OpenAPI allows: the OpenAPI is wrong, a finding.
    assert refused(422, body("invalid request: 'epsilons.0': input should be greater than 0; fix the field")) is None
    assert refused(422, body("past the end", "no_such_code")) is None  # an unknown code
    assert refused(422, body("")) is None and refused(422, body("bad")) is None  # no sentence
    assert refused(422, json.dumps({"code": "validation_error"})) is None
    assert refused(422, "Unprocessable Entity") is None  # not JSON
    assert refused(200, body("'offset' is past the end of the release")) is None  # not a refusal


def test_every_4xx_without_an_error_body_is_a_contract_violation(fuzz_api):
    def entry(status, text, url="http://127.0.0.1:1/v1/releases/3/inputs?offset=9"):
        return {"request": {"method": "GET", "url": url}, "response": {"status": status, "content": {"text": text}}}

    result = fuzz_api.RoleResult("admin")
    fuzz_api.check_error_bodies([
        entry(422, body("'offset' 9 is past the end; the release has 4 rows")),  # fine
        entry(200, "not an error"),  # not a 4xx
        entry(404, "Not Found"),
        entry(404, "Not Found", url="http://127.0.0.1:1/v1/releases/3/inputs?offset=10"),  # same path: counted
        entry(405, body("wrong method used here", "method_not_allowed")),
    ], result)
    assert sorted((f.operation, f.status, f.count) for f in result.findings.values()) == [
        ("GET /v1/releases/3/inputs", 404, 2), ("GET /v1/releases/3/inputs", 405, 1)]
    assert result.failures(schema=True) == 3 and result.failures(schema=False) == 0


def test_only_requests_past_authentication_and_the_back_off_count_as_reached(fuzz_api):
    from collections import Counter

    result = fuzz_api.RoleResult("modeler", requests=10, statuses=Counter({200: 4, 401: 3, 429: 2, 404: 1}))
    assert result.reached == 5
    assert "10 requests (5 reached their endpoint)" in fuzz_api.figures(result)
