"""Alembic environment: migrations run on the connection the service hands over (``db.migrate``).

To write a new migration after changing ``curator_service/persistence/models.py``::

    python -c "from curator_service.persistence.db import revision; revision('what changed')"
"""

from alembic import context

from curator_service.persistence.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
