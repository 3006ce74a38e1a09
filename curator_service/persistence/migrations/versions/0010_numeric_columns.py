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
import zipfile
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
                        sa.column('feature_columns', sa.JSON), sa.column('evaluator', sa.JSON),
                        sa.column('table', sa.LargeBinary), sa.column('numeric_columns', sa.JSON))
    connection = op.get_bind()
    rows = connection.execute(sa.select(datasets.c.id, datasets.c.columns, datasets.c.feature_columns,
                                        datasets.c.evaluator)).all()
    for dataset_id, columns, features, evaluator in rows:
        blob = connection.execute(sa.select(datasets.c.table).where(datasets.c.id == dataset_id)).scalar_one()
        connection.execute(sa.update(datasets).where(datasets.c.id == dataset_id)
                           .values(numeric_columns=_stored_as_numbers(blob, columns, features, evaluator)))


def _stored_as_numbers(blob: bytes, columns: list[str], features: list[str], evaluator: dict) -> list[str]:
    """The columns the table's blob holds as numbers; a blob that is not a readable table (none is, but a migration
    must not stop on one) keeps the columns registration always required as numbers."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as archive:  # the table's arrays, in column order
            return [name for i, name in enumerate(columns) if archive[f"arr_{i}"].dtype.kind == "f"]
    except (ValueError, OSError, KeyError, zipfile.BadZipFile):
        required = {*features, *([evaluator["column"]] if evaluator.get("kind") == "column" else [])}
        return [name for name in columns if name in required]


def downgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('numeric_columns')
