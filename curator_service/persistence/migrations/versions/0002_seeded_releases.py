"""Record whether a release was seeded; a seeded release is never certified.

Releases made before this revision did not record their seed: they get ``seeded = NULL`` (unknown) and
lose ``certified``, because research mode (then the default) accepted seeds. Queued jobs submitted with a
modeler key and a seed (accepted in research mode before this revision) are failed instead of run: a
modeler may never choose the noise.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28

"""
from datetime import UTC, datetime
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

MODELER_SEED_REFUSED = ("refused: submitted with a modeler key and a seed, which pobo no longer accepts (whoever "
                        "knows the seed can replay the noise); its privacy budget stays charged; submit it without one")


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('seeded', sa.Boolean(), nullable=True))
    releases = sa.table('releases', sa.column('certified', sa.Boolean()), sa.column('seeded', sa.Boolean()))
    op.execute(releases.update().values(certified=False))

    jobs = sa.table('jobs', sa.column('id', sa.Integer()), sa.column('key_id', sa.Integer()),
                    sa.column('params', sa.JSON()), sa.column('status', sa.String()),
                    sa.column('message', sa.Text()), sa.column('finished_at', sa.DateTime(timezone=True)))
    keys = sa.table('api_keys', sa.column('id', sa.Integer()), sa.column('role', sa.String()))
    connection = op.get_bind()
    queued = connection.execute(
        sa.select(jobs.c.id, jobs.c.params).join(keys, keys.c.id == jobs.c.key_id)
        .where(jobs.c.status == 'queued', keys.c.role == 'modeler')
    ).all()
    refused = [job_id for job_id, params in queued if (params or {}).get('seed') is not None]
    if refused:
        connection.execute(jobs.update().where(jobs.c.id.in_(refused))
                           .values(status='failed', message=MODELER_SEED_REFUSED, finished_at=datetime.now(UTC)))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_column('seeded')
