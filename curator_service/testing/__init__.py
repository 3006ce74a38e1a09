"""Test harnesses for the curator service (used by the tests, the demo and the benchmarks)."""

from curator_service.testing.local_curator import LocalCurator, curator_command, free_port

__all__ = ["LocalCurator", "curator_command", "free_port"]
