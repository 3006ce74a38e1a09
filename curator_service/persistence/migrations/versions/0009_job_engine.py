"""The job engine: jobs run on Dask workers that claim them in the database, so a job row now says who
runs it (``claimed_by``), when that worker last showed it was alive (``heartbeat_at``, so a restarted replica fails
only jobs whose worker died), when it must stop (``deadline_at``) and the client's ``request_id`` that makes creating
it idempotent: unique per requester, the key or the admin (key_id NULL counts as 0).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('request_id', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('claimed_by', sa.String(length=240), nullable=True))
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('deadline_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('started_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('uq_jobs_requester_request', 'jobs', [sa.text('coalesce(key_id, 0)'), 'request_id'], unique=True)


def downgrade() -> None:
    op.drop_index('uq_jobs_requester_request', table_name='jobs')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('started_at')
        batch_op.drop_column('deadline_at')
        batch_op.drop_column('heartbeat_at')
        batch_op.drop_column('claimed_by')
        batch_op.drop_column('request_id')
