"""Input a caller controls (a request path, a server-side file name) is refused with a 4xx and,
where it is audited, audited; never a 500 that skips the audit trail. Both backends: PostgreSQL enforces the
audit target's VARCHAR(240), SQLite stores any length (the divergence that hid F1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from curator_service.testing import LocalCurator
from tests.governance.conftest import assert_error, backend_env, http, lab_csv

TARGET_LENGTH = 240  # audit_events.target is String(240)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def rooted(request, tmp_path_factory, job_cluster) -> Iterator[LocalCurator]:
    """A server that may register CSV files found under its import root (POBO_IMPORT_ROOT), on either backend."""
    root = tmp_path_factory.mktemp("imports")
    (root / "table.csv").write_text(lab_csv()[0])
    env = {**backend_env(request.param), "POBO_IMPORT_ROOT": str(root)}
    server = LocalCurator(tmp_path_factory.mktemp("refused-input-curator"), env=env).start()
    yield server
    server.stop()


def test_a_bad_token_on_a_long_path_is_a_401_and_audited_within_the_target_column(rooted):
    path = "/v1/releases/" + "x" * 400
    with http(rooted, "not-a-token") as stranger:
        assert_error(stranger.get(path), 401, "unauthorized")
    with http(rooted) as admin:
        failed = [e for e in admin.get("/v1/audit", params={"action": "auth.failed"}).json()
                  if (e["target"] or "").startswith("GET /v1/releases/xxx")]
    assert len(failed) == 1 and len(failed[0]["target"]) <= TARGET_LENGTH, failed


@pytest.mark.parametrize("name", ["a\x00b", "table.csv\x00.txt", "x" * 300, "sub/" + "y" * 300 + "/table.csv"])
def test_a_path_with_a_nul_byte_or_an_over_long_name_is_a_422(rooted, name):
    spec = {"name": "from-path", "feature_columns": ["a", "b", "c"], "evaluator": {"kind": "column", "column": "y"},
            "scaling": {"kind": "bounds", "lower": [0, 0, 0], "upper": [1, 1, 1], "diameter": 1},
            "budget": {"epsilon": 1.0, "delta": 1e-6}}
    with http(rooted) as admin:
        assert_error(admin.post("/v1/datasets", json={**spec, "path": name}), 422, "validation_error", "path")
        assert admin.post("/v1/datasets", json={**spec, "name": f"ok-{len(name)}", "path": "table.csv"}
                          ).status_code == 201  # the positive control: a usable name inside the root registers
