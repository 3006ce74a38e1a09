"""What a dataset measures and its approved label columns: ``measurement`` (the quantity, its unit and the expected
delay, public words shown on worklists and releases) and ``label_columns`` (0/1 columns a job may name). Datasets
registered before this revision state neither.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('measurement', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('label_columns', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('label_columns')
        batch_op.drop_column('measurement')
