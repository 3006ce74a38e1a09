"""Bring-your-own optimiser: adapters that let BoTorch and Optuna choose rows of a release, each an optional
extra (``pip install 'pobo[botorch]'``, ``'pobo[optuna]'``). Each implements the
:class:`modeler_client.batch.Proposer` protocol, so :func:`modeler_client.batch.run_batched` runs it over the
wire in batches or asynchronously, with the same run file, resume and charging as GP-UCB."""
