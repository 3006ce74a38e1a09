"""Legacy datasets' ``numeric_columns`` limited to the columns their registration declared as numbers.

Revision 0010 gave a dataset registered before it every column its table stored as numbers: a column with one cell
that was not a number was left out, the same column without it kept. Whether a job could name such a column, and so
whether its submission answered 422 or went on to the budget, key cap and job limit (409) or ran, depended on what
the column's cells held. From this revision a dataset without ``label_columns`` (registered before revision 0012)
keeps only the columns its registration always required as numbers: its features and its measured column. A column
this takes away is named in a warning (names only, never a cell): register the table again with it in
``numeric_columns`` for jobs to read it.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

"""
import logging
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

logger = logging.getLogger("curator_service.migrations")


def declared(columns: list[str], features: list[str], evaluator: dict) -> list[str]:
    """The columns a registration always required as numbers, in the table's order."""
    required = {*features, *([evaluator["column"]] if evaluator.get("kind") == "column" else [])}
    return [name for name in columns if name in required]


def upgrade() -> None:
    datasets = sa.table('datasets', sa.column('id', sa.Integer), sa.column('name', sa.String),
                        sa.column('columns', sa.JSON), sa.column('feature_columns', sa.JSON),
                        sa.column('evaluator', sa.JSON), sa.column('numeric_columns', sa.JSON),
                        sa.column('label_columns', sa.JSON))
    connection = op.get_bind()
    rows = connection.execute(sa.select(datasets.c.id, datasets.c.name, datasets.c.columns, datasets.c.feature_columns,
                                        datasets.c.evaluator, datasets.c.numeric_columns)
                              .where(datasets.c.label_columns.is_(None))).all()
    for dataset_id, name, columns, features, evaluator, numeric in rows:
        kept = declared(columns, features, evaluator)
        if dropped := [column for column in numeric or [] if column not in kept]:
            logger.warning("dataset %d (%r), registered before columns were declared: jobs may no longer read %s "
                           "(their cells decided whether they could); register the table again with them in "
                           "numeric_columns to let jobs read them", dataset_id, name, dropped)
        connection.execute(sa.update(datasets).where(datasets.c.id == dataset_id).values(numeric_columns=kept))


def downgrade() -> None:
    pass  # the columns taken away were chosen by the cells: nothing to restore them from without reading them again
