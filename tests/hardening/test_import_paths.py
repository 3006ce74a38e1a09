"""Registration by server-side ``path`` reads only files inside the configured data root
(``POBO_IMPORT_ROOT``; unset: uploads only), and no error ever echoes a file's contents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.curator_service.conftest import assert_error, dataset_spec, synthetic_table, table_csv

X, Y = synthetic_table(6)
SECRET = "patient-7 diagnosis positive"
"""The first line of a file outside the root: it must never come back in an error."""


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.csv"
    path.parent.mkdir()
    path.write_text(f"{SECRET}\n1,2\n3,4\n")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "imports"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "table.csv").write_text(table_csv(X, Y))
    return root


def register_path(client, path: str, name: str = "from-path"):
    return client.post("/v1/datasets", json={**dataset_spec(name=name), "path": path})


def test_without_an_import_root_no_server_path_is_read(connect, root, outside):
    admin = connect()
    for path in ("/etc/hosts", str(outside), str(root / "sub" / "table.csv")):
        response = register_path(admin, path)
        assert_error(response, 403, "forbidden", "POBO_IMPORT_ROOT")
        assert SECRET not in response.text and "localhost" not in response.text
    assert admin.get("/v1/datasets").json() == []


def test_a_file_inside_the_root_registers_by_relative_or_absolute_path(connect, root):
    admin = connect(import_root=root)
    assert register_path(admin, "sub/table.csv", name="relative").status_code == 201
    assert register_path(admin, str(root / "sub" / "table.csv"), name="absolute").status_code == 201


def test_paths_that_leave_the_root_are_refused_without_reading_them(connect, root, outside):
    (root / "link.csv").symlink_to(outside)
    (root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    admin = connect(import_root=root)
    escapes = ["/etc/hosts", "/etc/group", str(outside), f"../outside/{outside.name}",
               f"sub/../../outside/{outside.name}", "link.csv", f"linkdir/{outside.name}"]
    for path in escapes:
        response = register_path(admin, path)
        assert_error(response, 403, "forbidden", "POBO_IMPORT_ROOT")
        for secret in (SECRET, "localhost", "root:x"):
            assert secret not in response.text, (path, response.text)
    assert admin.get("/v1/datasets").json() == []


def test_errors_about_a_file_inside_the_root_name_columns_but_never_cell_values(connect, root):
    (root / "cells.csv").write_text("a,b,c,y\n0.123456789,oops-7731,0.5,1\n0.2,0.3,0.4,2\n")
    admin = connect(import_root=root)
    response = register_path(admin, "cells.csv")
    assert_error(response, 422, "validation_error", "'b'")
    assert "oops-7731" not in response.text and "0.123456789" not in response.text
    missing = register_path(admin, "nowhere.csv")
    assert_error(missing, 422, "validation_error", "nowhere.csv")
