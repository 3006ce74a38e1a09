"""The job kinds this service runs, listed once in :data:`KINDS`.

Each kind is a plain module defining ``KIND = JobKind(...)`` (:mod:`curator_service.jobs`: what ``cost``, ``run``
and ``commit`` must do). Kinds sit beside the services they use (the ledger, releases, evaluators) and above the job
framework that runs them; a new kind is a module here and one line in :data:`KINDS`.
"""

from __future__ import annotations

from curator_service.jobs import JobKind
from curator_service.services.job_kinds import dp_bo, dp_mean, dp_tune, dpareto, release


def by_name(*kinds: JobKind) -> dict[str, JobKind]:
    """The kinds by their names; two kinds of one name are a programming error."""
    registry: dict[str, JobKind] = {}
    for kind in kinds:
        if kind.name in registry:
            raise RuntimeError(f"two job kinds are named {kind.name!r}; rename one")
        registry[kind.name] = kind
    return registry


KINDS: dict[str, JobKind] = by_name(dp_mean.KIND, dp_bo.KIND, dp_tune.KIND, dpareto.KIND, release.KIND)
