"""Ledger entries record what was spent as data: the mechanism, its DP event (σ or scale and sensitivity, in the
style of dp-accounting) and the actor (the admin or which key).

Older entries get what is known: a release's mechanism and, from its stored noise σ and sensitivity (every part's,
when its public parameters were recorded), its Gaussian events; po-gp-ucb is a non-private event; a job's entry
names its kind. The actor is read from the audit event that created the release or job, or raised the budget (in
order, per dataset); it stays NULL when none is found. The event builders are copied here on purpose: a migration
must not change when the service's code does.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

"""
from typing import Any, Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

ledger = sa.table('ledger', sa.column('id', sa.Integer()), sa.column('dataset_id', sa.Integer()),
                  sa.column('kind', sa.String()), sa.column('release_id', sa.Integer()), sa.column('job_id', sa.Integer()),
                  sa.column('mechanism', sa.String()), sa.column('event', sa.JSON()), sa.column('actor', sa.String()))
releases = sa.table('releases', sa.column('id', sa.Integer()), sa.column('mechanism', sa.String()),
                    sa.column('noise_std', sa.Float()), sa.column('sensitivity', sa.Float()),
                    sa.column('parameters', sa.JSON()))
jobs = sa.table('jobs', sa.column('id', sa.Integer()), sa.column('kind', sa.String()))
audit = sa.table('audit_events', sa.column('id', sa.Integer()), sa.column('actor', sa.String()),
                 sa.column('action', sa.String()), sa.column('target', sa.String()))


def _gaussian(std: float, sensitivity: float, part: str) -> dict[str, Any]:
    return {"class_name": "GaussianDpEvent", "noise_multiplier": std / sensitivity, "std": std,
            "sensitivity": sensitivity, "part": part}


def _release_event(mechanism: str, noise_std: float | None, sensitivity: float | None,
                   parameters: dict | None) -> dict[str, Any] | None:
    if mechanism != "gaussian":
        return {"class_name": "NonPrivateDpEvent"}
    if noise_std is None or sensitivity is None:
        return None
    parts = [_gaussian(noise_std, sensitivity, "inputs")]
    for name, part in (("pca", "pca gram matrix"), ("measurements", "measurements")):
        if parameters and parameters.get(name):
            parts.append(_gaussian(parameters[name]["noise_std"], parameters[name]["sensitivity"], part))
    return parts[0] if len(parts) == 1 else {"class_name": "ComposedDpEvent", "events": parts}


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('ledger', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mechanism', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('event', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('actor', sa.String(length=240), nullable=True))
    connection = op.get_bind()
    actors = {target: actor for actor, target in connection.execute(
        sa.select(audit.c.actor, audit.c.target).where(audit.c.action.in_(["release.create", "job.submit"])))}
    raisers: dict[str, list[str]] = {}
    for actor, target in connection.execute(sa.select(audit.c.actor, audit.c.target)
                                            .where(audit.c.action == "dataset.budget_raise").order_by(audit.c.id)):
        raisers.setdefault(target, []).append(actor)
    rows = connection.execute(sa.select(ledger.c.id, ledger.c.dataset_id, ledger.c.kind, ledger.c.release_id,
                                        ledger.c.job_id).order_by(ledger.c.id)).all()
    for entry_id, dataset_id, kind, release_id, job_id in rows:
        values: dict[str, Any] = {}
        if kind == "raise":
            queue = raisers.get(f"dataset:{dataset_id}", [])
            values["actor"] = queue.pop(0) if queue else None
        elif release_id is not None:
            release = connection.execute(sa.select(releases).where(releases.c.id == release_id)).one()
            values["mechanism"] = release.mechanism
            values["event"] = _release_event(release.mechanism, release.noise_std, release.sensitivity,
                                             release.parameters)
            values["actor"] = actors.get(f"release:{release_id}")
        elif job_id is not None:
            job_kind = connection.execute(sa.select(jobs.c.kind).where(jobs.c.id == job_id)).scalar_one()
            values["mechanism"] = f"job:{job_kind}"
            values["event"] = {"class_name": "UnsupportedDpEvent",
                               "reason": f"job kind {job_kind!r}: its (epsilon, delta) is the composition its "
                                         "module documents"}
            values["actor"] = actors.get(f"job:{job_id} ({job_kind})")
        if values:
            connection.execute(ledger.update().where(ledger.c.id == entry_id).values(**values))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('ledger', schema=None) as batch_op:
        batch_op.drop_column('actor')
        batch_op.drop_column('event')
        batch_op.drop_column('mechanism')
