"""Optuna over a release's rows without throwing away their geometry.

A naive mapping (``trial.suggest_int("row", 0, n − 1)``) makes Optuna model f over arbitrary row numbers. Here
each trial's search space is the released coordinates z_0 … z_{r−1} (the bounding box of Z); the sampler's
proposal is snapped to the nearest row not yet measured or pending, and the study records a completed trial
*at that row's coordinates* with its measured value (``user_attrs``: ``row``), so the sampler learns f over Z
itself: the study holds one trial per query made (a row the curator could not measure is a FAIL trial), so its
trial count is the number of queries. Proposals are trials of a second, in-memory study run by the same sampler,
which also sees every completed trial; a proposal stays RUNNING there while its row is pending (what TPE's
``constant_liar`` uses to spread a batch) and is then closed as FAIL, which samplers ignore.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

try:
    import optuna
    from optuna.distributions import BaseDistribution, FloatDistribution
    from optuna.trial import TrialState
except ImportError as exc:  # optional extra
    raise ImportError("the Optuna adapter needs optuna: pip install 'pobo[optuna]'") from exc


def nearest_free_row(Z: NDArray, point: NDArray, taken: set[int]) -> int:
    """The row of Z closest to ``point`` (Euclidean) among those not in ``taken``."""
    distances = np.sum((Z - point) ** 2, axis=1)
    if taken:
        distances[list(taken)] = np.inf
    if not np.isfinite(distances).any():
        raise ValueError("every row has been measured or is pending: nothing is left to ask")
    return int(np.argmin(distances))


class OptunaProposer:
    """An Optuna study (TPE by default, maximising the oriented value) proposing rows of ``Z``.

    ``study`` may be given (any sampler; direction ``maximize``); ``study.trials`` then hold one trial per query:
    a completed trial per measured row with params ``z0 …`` = that row of Z, a failed one per row the curator
    could not measure.
    """

    def __init__(self, Z: NDArray, *, study: optuna.Study | None = None, seed: int | None = None) -> None:
        self.Z = np.asarray(Z, dtype=float)
        self.study = study or optuna.create_study(
            direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed, constant_liar=True)
        )
        self._proposing = optuna.create_study(direction="maximize", sampler=self.study.sampler)
        self.distributions: dict[str, BaseDistribution] = {
            f"z{j}": FloatDistribution(float(low), float(high))
            for j, (low, high) in enumerate(zip(self.Z.min(axis=0), self.Z.max(axis=0)))
        }
        self.measured: set[int] = set()
        self.proposals: dict[int, optuna.Trial] = {}  # row → its proposal trial, RUNNING while pending

    def ask(self, q: int, pending: Sequence[int]) -> list[int]:
        taken = self.measured | {int(i) for i in pending} | set(self.proposals)
        picks = []
        for _ in range(q):
            trial = self._proposing.ask(self.distributions)
            point = np.array([trial.params[name] for name in self.distributions])
            row = nearest_free_row(self.Z, point, taken)
            trial.set_user_attr("snapped_to_row", row)
            self.proposals[row] = trial
            taken.add(row)
            picks.append(row)
        return picks

    def tell(self, index: int, value: float) -> None:
        self._record(int(index), optuna.trial.create_trial(
            params=self._at(int(index)), distributions=self.distributions, value=float(value),
            user_attrs={"row": int(index)}))

    def exclude(self, index: int) -> None:
        """The curator could not measure this row: a FAIL trial at it (charged, no value), never proposed again."""
        self._record(int(index), optuna.trial.create_trial(
            params=self._at(int(index)), distributions=self.distributions, state=TrialState.FAIL,
            user_attrs={"row": int(index), "cannot_measure": True}))

    def _at(self, index: int) -> dict[str, float]:
        return {name: float(z) for name, z in zip(self.distributions, self.Z[index])}

    def _record(self, index: int, trial: optuna.trial.FrozenTrial) -> None:
        proposal = self.proposals.pop(index, None)
        if proposal is not None:
            self._proposing.tell(proposal, state=TrialState.FAIL)
        self.measured.add(index)
        self.study.add_trial(trial)
        if trial.state == TrialState.COMPLETE:
            self._proposing.add_trial(trial)
