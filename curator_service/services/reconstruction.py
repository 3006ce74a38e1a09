"""The reconstruction audit (docs/design.md §4): how well an attacker who knows K records recovers the others.

Runs :func:`shared.dp.reconstruction_attack.reconstruction_audit` on the data the mechanism saw (raw features for
``po-gp-ucb``, publicly scaled features for ``gaussian``) and the stored release. Only aggregate errors
leave the service, and only to the curator.
"""

from __future__ import annotations

import numpy as np

from curator_service.persistence.blobs import TableCache, cached_table, decode_matrix
from curator_service.persistence.db import Database, get_or_404
from curator_service.persistence.models import Dataset, Release
from curator_service.services.audit import record
from curator_service.services.policy import Principal, refuse_seed
from curator_service.services.releases import dataset_warnings, mechanism_input, release_warnings, step_of
from curator_service.settings import Settings
from shared.api.errors import ApiError
from shared.api.schemas import ReconstructionAuditOut, ReconstructionAuditRequest
from shared.dp.reconstruction_attack import reconstruction_audit as reconstruction_audit_of


def reconstruction_audit(db: Database, tables: TableCache, settings: Settings, principal: Principal, release_id: int,
                         body: ReconstructionAuditRequest) -> ReconstructionAuditOut:
    """Audited; the attack runs outside any transaction."""
    refuse_seed(settings, principal, body.seed)
    with db.write() as session:
        release = get_or_404(session, Release, release_id)
        if body.known >= release.n:
            raise ApiError(422, "validation_error", f"'known' must be below the number of rows ({release.n}) so that "
                           "some rows are left to reconstruct")
        dataset = session.get_one(Dataset, release.dataset_id)
        if body.known < dataset.d + 1:
            raise ApiError(422, "validation_error",
                           f"'known' must be at least d + 1 = {dataset.d + 1} (the attack fits "
                           "an affine map of the d features); ask for more known rows")
        X_used = mechanism_input(cached_table(tables, dataset), dataset.scaling, release.mechanism)
        Z = decode_matrix(release.inputs)
        record(session, principal, "release.audit_reconstruction", f"release:{release_id}")
        mechanism, noise_std = release.mechanism, release.noise_std
        warnings = release_warnings(release, step_of(release, dataset)) + dataset_warnings(dataset)
    known = np.random.default_rng(body.seed).choice(Z.shape[0], size=body.known, replace=False)
    report = reconstruction_audit_of(X_used, Z, np.sort(known), noise_std=noise_std).to_dict()
    return ReconstructionAuditOut(
        release_id=release_id, mechanism=mechanism, warnings=warnings, **report
    )
