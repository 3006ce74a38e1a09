"""Job kinds: each module here defines ``KIND = JobKind(...)`` and is registered automatically."""
