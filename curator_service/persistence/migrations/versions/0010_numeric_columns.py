"""``datasets.numeric_columns``: the columns a job may read as numbers, fixed at registration from the spec (the
features, the measured column, the spec's numeric and label columns), so that whether a job may read a column never
depends on what its cells hold.

A dataset registered before this revision gets the columns its registration stored as numbers (every cell was one):
what its jobs could read then.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

"""
import io
from typing import Sequence, Union

import numpy as np
import sqlalchemy as sa
from alembic import op


revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('numeric_columns', sa.JSON(), nullable=True))
    datasets = sa.table('datasets', sa.column('id', sa.Integer), sa.column('columns', sa.JSON),
                        sa.column('table', sa.LargeBinary), sa.column('numeric_columns', sa.JSON))
    connection = op.get_bind()
    for dataset_id, columns in connection.execute(sa.select(datasets.c.id, datasets.c.columns)).all():
        blob = connection.execute(sa.select(datasets.c.table).where(datasets.c.id == dataset_id)).scalar_one()
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:  # the table's arrays, in column order
            numeric = [name for i, name in enumerate(columns) if archive[f"arr_{i}"].dtype.kind == "f"]
        connection.execute(sa.update(datasets).where(datasets.c.id == dataset_id).values(numeric_columns=numeric))
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.alter_column('numeric_columns', existing_type=sa.JSON(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('numeric_columns')
