"""Governance per key and the lab workflow: a key's policy (an ε/δ cap across everything it triggers,
the job kinds it may run, an expiry) and a dataset's row-identifier column (e.g. the MRN), each in a companion
table that a key or a dataset may lack.

Keys made before this revision have no policy row, so they get their role's defaults: no cap and no expiry; a
curator key runs every job kind, a modeler key none. Before, a modeler key could run every modeler job kind and so
spend a dataset's whole budget; give it a policy with the kinds it needs (``PUT /v1/keys/{id}/policy``) to let it
run jobs again. Queries may now be ``unmeasurable`` ("cannot measure"): ``queries.status`` already holds it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('key_policies',
    sa.Column('key_id', sa.Integer(), nullable=False),
    sa.Column('epsilon_cap', sa.Float(), nullable=True),
    sa.Column('delta_cap', sa.Float(), nullable=True),
    sa.Column('jobs', sa.JSON(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], ),
    sa.PrimaryKeyConstraint('key_id')
    )
    op.create_table('dataset_identifiers',
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('column', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ),
    sa.PrimaryKeyConstraint('dataset_id')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('dataset_identifiers')
    op.drop_table('key_policies')
