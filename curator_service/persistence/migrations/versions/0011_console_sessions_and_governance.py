"""Server-side console sessions (the browser's cookie holds a random id, the table its SHA-256, the credential it
was opened with and its expiry), and the governance mark of a key's policy (only the admin token or a key marked
for governance raises budgets, revokes keys and edits other keys' policies). Existing keys are not marked.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('console_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('id_hash', sa.String(length=64), nullable=False),
    sa.Column('key_id', sa.Integer(), nullable=True),
    sa.Column('credential_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('id_hash')
    )
    op.create_index('ix_console_sessions_key_id', 'console_sessions', ['key_id'], unique=False)
    with op.batch_alter_table('key_policies', schema=None) as batch_op:
        batch_op.add_column(sa.Column('governance', sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('key_policies', schema=None) as batch_op:
        batch_op.drop_column('governance')
    op.drop_index('ix_console_sessions_key_id', table_name='console_sessions')
    op.drop_table('console_sessions')
