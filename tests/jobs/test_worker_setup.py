"""A pobo worker fails closed when it would spill task data (raw rows, a release's M) to its disk (review F9)."""

from types import SimpleNamespace

import pytest

from curator_service.jobs.cluster import SpillingWorker, dask_setup


@pytest.mark.parametrize("target, spill", [(0.6, 0.7), (False, 0.7), (0.6, False)])
def test_a_worker_that_would_spill_refuses_to_start(target, spill):
    worker = SimpleNamespace(memory_manager=SimpleNamespace(memory_target_fraction=target, memory_spill_fraction=spill))
    with pytest.raises(SpillingWorker, match="DASK_DISTRIBUTED__WORKER__MEMORY__SPILL=False"):
        dask_setup(worker)
