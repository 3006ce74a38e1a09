"""`pip install pobo` (no extras) is the modeler's client: every module the client imports must work
without the curator's server stack, which only `pobo[curator]` installs."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Top-level modules of the `curator` extra's distributions.
SERVER_MODULES = ["fastapi", "starlette", "distributed", "dask", "uvicorn", "multipart", "jinja2", "sqlalchemy",
                  "alembic", "pydantic_settings", "dp_accounting", "opendp", "sklearn", "psycopg"]

# Imports every module of modeler_client with the server modules made unimportable (None in sys.modules
# makes `import x` raise ImportError), then lists the modules that failed for want of one of them. A module
# that needs an optional extra of its own (the BoTorch adapter needs torch) is not a server dependency.
PROBE = """
import importlib, pkgutil, sys
server = set(sys.argv[1:])
for name in server:
    sys.modules[name] = None
import modeler_client
failed = []
for module in pkgutil.walk_packages(modeler_client.__path__, "modeler_client."):
    try:
        importlib.import_module(module.name)
    except ImportError as error:
        missing = getattr(error.__cause__ or error, "name", None)
        if missing is None or missing.split(".")[0] in server:
            failed.append(f"{module.name}: {error}")
print("\\n".join(failed))
"""


def test_the_base_install_lists_no_server_library():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for server in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "opendp", "dp-accounting", "scikit-learn"):
        assert server not in base, f"{server} is in the base install; it belongs to the curator extra"
        assert any(server in requirement.lower() for requirement in project["optional-dependencies"]["curator"])


def test_every_client_module_imports_without_the_server_stack():
    done = subprocess.run([sys.executable, "-c", PROBE, *SERVER_MODULES], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", f"client modules that need the server stack:\n{done.stdout}"
