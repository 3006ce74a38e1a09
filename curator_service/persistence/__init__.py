"""Where the curator keeps things: the database (:mod:`.db`), its tables (:mod:`.models`), the blob codecs for
raw tables and released matrices (:mod:`.blobs`) and the Alembic migrations (``migrations/``)."""
