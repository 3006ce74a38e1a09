"""BoTorch over the discrete candidate set: the released rows Z are the only points a query can name, so the
acquisition is maximised over them (``optimize_acqf_discrete(choices=Z_free)``), never over a continuous box.

Per ask: a ``SingleTaskGP`` (inputs normalised to Z's public bounding box, outcomes standardised, hyperparameters
by ``fit_gpytorch_mll``) on the answers so far, then q rows at once by

* ``"ucb"``: qUpperConfidenceBound with β_t = 2 log(n t² π² / (6 δ')) (PO-GP-UCB's Algorithm 2, as our engine);
* ``"ei"``: qLogExpectedImprovement over the best value seen.

One row with nothing pending uses the analytic forms instead (``UpperConfidenceBound``: μ + √β_t σ exactly, and
``LogExpectedImprovement``), as BoTorch recommends for q = 1: exact, and no Monte-Carlo samples to pay for.
Pending rows are passed as ``X_pending`` (the acquisition integrates over their unknown answers) and, with
measured rows, removed from the choices. Before ``n_init`` answers exist the rows are drawn at random.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from shared.gp.ucb import gp_ucb_beta

try:
    import torch
    from botorch.acquisition import (
        AcquisitionFunction,
        LogExpectedImprovement,
        UpperConfidenceBound,
        qLogExpectedImprovement,
        qLogNoisyExpectedImprovement,
        qUpperConfidenceBound,
    )
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize
    from botorch.optim import optimize_acqf_discrete
    from botorch.sampling import SobolQMCNormalSampler
    from gpytorch.mlls import ExactMarginalLogLikelihood
except ImportError as exc:  # optional extra
    raise ImportError("the BoTorch adapter needs botorch: pip install 'pobo[botorch]'") from exc


class BoTorchProposer:
    """q-batch UCB, EI or noisy EI with BoTorch over the rows of ``Z`` (values told oriented: larger is better).

    ``"nei"`` is ``qLogNoisyExpectedImprovement`` with the observed rows as its baseline (BoTorch's recommended batch
    acquisition); a single pick with nothing pending uses the analytic acquisitions for ``"ucb"`` and ``"ei"``."""

    def __init__(
        self,
        Z: NDArray,
        *,
        acquisition: Literal["ucb", "ei", "nei"] = "ucb",
        ucb_delta: float = 0.025,
        n_init: int = 2,
        mc_samples: int = 256,
        seed: int = 0,
    ) -> None:
        self.Z = torch.as_tensor(np.asarray(Z, dtype=float), dtype=torch.float64)
        self.acquisition = acquisition
        self.ucb_delta = ucb_delta
        self.n_init = n_init
        self.mc_samples = mc_samples
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.bounds = torch.stack([self.Z.min(dim=0).values, self.Z.max(dim=0).values])
        self.indices: list[int] = []
        self.model: SingleTaskGP | None = None  # the newest fitted model (its hyperparameters, for studies)
        self.values: list[float] = []

    def tell(self, index: int, value: float) -> None:
        self.indices.append(int(index))
        self.values.append(float(value))

    def _model(self) -> SingleTaskGP:
        X = self.Z[self.indices]
        Y = torch.tensor(self.values, dtype=torch.float64).unsqueeze(-1)
        model = SingleTaskGP(X, Y, input_transform=Normalize(d=X.shape[-1], bounds=self.bounds),
                             outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    def ask(self, q: int, pending: Sequence[int]) -> list[int]:
        taken = set(self.indices) | {int(i) for i in pending}
        free = np.setdiff1d(np.arange(len(self.Z)), list(taken))
        if len(free) == 0:
            raise ValueError("every row has been measured or is pending: nothing is left to ask")
        q = min(q, len(free))
        if len(self.values) < self.n_init:
            return [int(i) for i in self.rng.choice(free, size=q, replace=False)]
        self.model = model = self._model()
        beta = gp_ucb_beta(len(self.values) + len(pending) + 1, len(self.Z), self.ucb_delta)
        acqf: AcquisitionFunction
        sampler = SobolQMCNormalSampler(sample_shape=torch.Size([self.mc_samples]), seed=self.seed + len(self.values))
        X_pending = self.Z[list(pending)] if len(pending) else None
        if self.acquisition == "nei":
            acqf = qLogNoisyExpectedImprovement(model, X_baseline=self.Z[self.indices], sampler=sampler,
                                                X_pending=X_pending, prune_baseline=True)
        elif q == 1 and X_pending is None:
            acqf = (UpperConfidenceBound(model, beta=beta) if self.acquisition == "ucb"
                    else LogExpectedImprovement(model, best_f=max(self.values)))
        elif self.acquisition == "ucb":
            acqf = qUpperConfidenceBound(model, beta=beta, sampler=sampler, X_pending=X_pending)
        else:
            acqf = qLogExpectedImprovement(model, best_f=max(self.values), sampler=sampler, X_pending=X_pending)
        choices = self.Z[free]
        candidates, _ = optimize_acqf_discrete(acqf, q=q, choices=choices, unique=True)
        nearest = torch.cdist(candidates, choices).argmin(dim=1)  # each candidate is a row of choices
        return [int(free[i]) for i in nearest.tolist()]
