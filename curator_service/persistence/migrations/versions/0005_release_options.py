"""Release options: a gaussian release records its projection kind, its public parameters and, with
private measurements, the noisy answer of every row; a dataset keeps the key of its column evaluator's simulated
measurement noise, so that noise is drawn once per row instead of per query.

Releases made before this revision keep ``projection`` and ``parameters`` NULL (not recorded) and have no private
measurements. Existing datasets get a fresh random key: their simulated noise is memoised from now on.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23

"""
import secrets
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.add_column(sa.Column('projection', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('parameters', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('measurements', sa.LargeBinary(), nullable=True))
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('simulation_key', sa.String(length=64), nullable=True))
    datasets = sa.table('datasets', sa.column('id', sa.Integer()), sa.column('simulation_key', sa.String()))
    connection = op.get_bind()
    for (dataset_id,) in connection.execute(sa.select(datasets.c.id)).all():
        connection.execute(datasets.update().where(datasets.c.id == dataset_id)
                           .values(simulation_key=secrets.token_hex(16)))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('simulation_key')
    with op.batch_alter_table('releases', schema=None) as batch_op:
        batch_op.drop_column('measurements')
        batch_op.drop_column('parameters')
        batch_op.drop_column('projection')
