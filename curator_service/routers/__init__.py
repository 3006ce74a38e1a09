"""The HTTP layer: one module per resource, one thin handler per endpoint, each declaring its role first
(:mod:`.auth`) and calling :mod:`curator_service.services`."""

from curator_service.routers import audit, datasets, jobs, keys, ledger, queries, releases, sessions

ROUTERS = tuple(module.router for module in (datasets, releases, keys, sessions, queries, ledger, audit, jobs))
