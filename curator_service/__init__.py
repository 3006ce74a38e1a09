"""The curator's service: holds the raw data, makes releases, answers index-only queries, keeps the ledger.

Start it with ``pobo-curator serve`` or build the ASGI app with :func:`curator_service.app.create_app`.
"""

from shared import __version__

__all__ = ["__version__"]
