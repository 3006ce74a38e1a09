"""What the curator does, as functions the HTTP routers, the web console and tests call.

Most take a SQLAlchemy session, so the caller chooses the transaction (``Database.read()`` / ``write()``) and
everything a function does commits together; those that compute for a while outside a transaction (a release, a
job's pricing, the planner, the reconstruction audit) take the :class:`~curator_service.persistence.db.Database`.
Who may see what is :mod:`.policy`; every change is recorded by :mod:`.audit` in the same transaction.
"""
