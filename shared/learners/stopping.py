"""A stop check that long loops call while they run (a DP-SGD training, a release's python evaluator over n rows),
so a cancelled job stops within seconds and not after its last epoch or row (a thread cannot be killed).

Whoever runs the training installs the check for its thread with :func:`stop_check` (the curator's job worker: the
job's cancel flag; a piece on the cluster: whether its task was cancelled); :func:`check_stop` calls it. The check
raises to stop (the curator's ``JobCancelled``), so this module needs no curator code. Outside such a block it does
nothing. The check must depend on the cancel alone, never on the data: where a training stops is then public.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


def _never() -> None:
    return None


_check: ContextVar[Callable[[], None]] = ContextVar("pobo_stop_check", default=_never)


@contextmanager
def stop_check(check: Callable[[], None]) -> Iterator[None]:
    """Within the block, in this thread, :func:`check_stop` calls ``check``, which raises to stop the training."""
    token = _check.set(check)
    try:
        yield
    finally:
        _check.reset(token)


def check_stop() -> None:
    """Raises if the installed check says stop; cheap (call it every few thousand rows of work)."""
    _check.get()()
