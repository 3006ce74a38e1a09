"""The torch engine of GP-UCB's candidate posterior against the Numba engine: in float64 the same μ, σ², V and
picks, bit for bit. On torch's CPU build by default; POBO_TORCH_DEVICE=cuda runs the engine checks on a GPU."""

import os
import warnings

import numpy as np
import pytest

from shared.gp.kernels import Matern52, SquaredExponential
from shared.gp.noisy_inputs import ExpectedSquaredExponential
from shared.gp.regression import CandidatePosterior
from shared.gp.ucb import GPUCB
from tests.shared.test_fused_step import _exp, _Opaque

N, T = 20_000, 40
DEVICE = os.environ.get("POBO_TORCH_DEVICE", "cpu")


@pytest.fixture(scope="module")
def torch():
    """torch, imported by the first test here (2-3 s: not at collection), or every test here skipped without it."""
    return pytest.importorskip("torch", reason="the torch engine needs torch (pip install 'pobo[gpu]'); CI installs it")


@pytest.fixture(autouse=True)
def one_torch_thread(torch):
    """One intra-op thread: on a shared 2-core machine torch's thread pool only adds contention at n = 20,000."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _objective(C):
    return np.sin(3.0 * C[:, 0]) + np.cos(2.0 * C[:, 1]) * C[:, 2] - 0.1 * (C**2).sum(axis=1)


def _bitwise_equal(numba_post, torch_post):
    assert np.array_equal(numba_post.mean, torch_post.mean)
    assert np.array_equal(numba_post._variance, torch_post._variance.cpu().numpy())
    t = numba_post.n_observations
    V = np.array([numba_post._row(k) for k in range(t)]).reshape(t, -1)
    assert np.array_equal(V, torch_post._factor[:t].cpu().numpy())


def _engines(C, **options):
    return GPUCB(C, delta=0.1, reserve=T, **options), GPUCB(C, delta=0.1, reserve=T, device=DEVICE, **options)


@pytest.mark.parametrize("options", [
    dict(lengthscale=0.9, signal_variance=1.3, noise_variance=1e-5),
    dict(kernel=Matern52(1.1, 0.8), noise_variance=1e-5, requery=False),
    dict(kernel=SquaredExponential(np.array([0.6, 1.5, 0.9, 2.0, 1.2]), 1.0), noise_variance=1e-4),
], ids=["se", "matern52-no-requery", "se-ard"])
def test_the_picks_and_the_posterior_are_the_numba_engines_bit_for_bit(options):
    C = np.random.default_rng(5).normal(size=(N, 5))
    f = _objective(C)
    numba_engine, torch_engine = _engines(C, **options)
    for t in range(T):
        i, j = numba_engine.suggest(), torch_engine.suggest()
        assert i == j, f"step {t}: Numba picked {i}, torch {j}"
        numba_engine.observe(i, f[i])
        torch_engine.observe(j, f[j])
    _bitwise_equal(numba_engine.posterior, torch_engine.posterior)
    if options.get("requery") is False:
        assert len(set(numba_engine.posterior.observed_indices)) == T


def test_batches_and_refits_pick_as_the_numba_engine():
    # GP-BUCB batches of 4 (hallucinated observations, then restored), an excluded row, and a refit of an ARD
    # Matérn-5/2 every 8 answers replayed on the device: 40 answers in all.
    rng = np.random.default_rng(8)
    C = rng.normal(size=(N, 4))
    f = _objective(C)
    options = dict(lengthscale=1.0, signal_variance=1.0, noise_variance=1e-4, refit_every=8, refit_kernel="matern52",
                   ard=True, n_restarts=1)
    numba_engine, torch_engine = (GPUCB(C, delta=0.1, rng=3, reserve=T, device=device, **options)
                                  for device in (None, DEVICE))
    for engine in (numba_engine, torch_engine):
        engine.exclude([int(np.argmax(f))])
    while numba_engine.n_observations < T:
        batch = numba_engine.suggest_batch(4)
        assert torch_engine.suggest_batch(4) == batch
        for engine in (numba_engine, torch_engine):
            for i in batch:
                engine.observe(i, f[i])
    from shared.gp.torch_posterior import TorchCandidatePosterior

    assert type(torch_engine.posterior) is TorchCandidatePosterior and type(torch_engine.kernel) is Matern52
    assert np.array_equal(numba_engine.kernel.lengthscale, torch_engine.kernel.lengthscale)
    _bitwise_equal(numba_engine.posterior, torch_engine.posterior)


@pytest.mark.parametrize("kernel", [
    ExpectedSquaredExponential(0.6, 1.1, input_noise_std=0.2, dim=3), _Opaque(Matern52(0.7, 1.2)),
], ids=["expected-se", "given-column"])
def test_growing_tiled_posteriors_agree_on_other_kernels(kernel):
    # Tiles of 128 candidates, V grown 3 rows at a time, duplicated rows (the expected-SE's own-row nugget).
    rng = np.random.default_rng(2)
    C = rng.normal(size=(1000, 3))
    C[[10, 500]] = C[3]
    from shared.gp.torch_posterior import TorchCandidatePosterior

    numba_post = CandidatePosterior(C, kernel, 0.01, chunk=128, block_rows=3)
    torch_post = TorchCandidatePosterior(C, kernel, 0.01, device=DEVICE, chunk=128, block_rows=3)
    excluded = np.array([3, 700])
    for i, y in zip([3, 10, 999, 0, 3, 500, 128, 127], rng.normal(size=8)):
        for post in (numba_post, torch_post):
            post.observe(i, y, next_beta=5.0, excluded=excluded)
        assert numba_post.ucb_argmax == torch_post.ucb_argmax
    _bitwise_equal(numba_post, torch_post)
    best = numba_post.best_upper_confidence_bound(2.0, excluded)
    assert best == torch_post.best_upper_confidence_bound(2.0, excluded)
    np.testing.assert_array_equal(numba_post.upper_confidence_bound(2.0), torch_post.upper_confidence_bound(2.0))
    everything = np.arange(len(C))
    assert torch_post.best_upper_confidence_bound(2.0, everything) == -1


def test_the_pass_arithmetic_rounds_as_the_numba_pass(torch):
    from shared.gp.torch_posterior import exp_as_pass, ordered_sum, sqrt_rounded

    rng = np.random.default_rng(4)
    x = np.concatenate([-np.logspace(-300, np.log10(707.0), 100_001), np.linspace(-707.0, 0.0, 100_001), [0.0, -0.0]])
    on_device = lambda a: torch.as_tensor(a, device=DEVICE)  # noqa: E731
    assert np.array_equal(exp_as_pass(on_device(x)).cpu().numpy().view(np.int64), _exp(x).view(np.int64))
    squares = rng.uniform(0.0, 100.0, 100_000)
    assert np.array_equal(sqrt_rounded(on_device(squares)).cpu().numpy(), np.sqrt(squares))
    # the sum of _add_rows: four rows a group, left to right, then the leftover rows (7 rows: one group, 3 left)
    rows, weights, first = rng.normal(size=(7, 1000)), rng.normal(size=7), rng.normal(size=1000)
    expected = first + (((weights[0] * rows[0] + weights[1] * rows[1]) + weights[2] * rows[2]) + weights[3] * rows[3])
    for k in range(4, 7):
        expected = expected + weights[k] * rows[k]
    got = ordered_sum(on_device(first), on_device(rows), on_device(weights)).cpu().numpy()
    assert np.array_equal(got, expected)


def test_devices_and_precisions(torch):
    C = np.random.default_rng(0).normal(size=(50, 2))
    options = dict(lengthscale=1.0, signal_variance=1.0, noise_variance=1e-3, delta=0.1)
    if not torch.cuda.is_available():
        assert GPUCB(C, device="auto", **options).device is None  # no GPU: the Numba engine
        with pytest.raises(ValueError, match="sees no CUDA GPU"):
            GPUCB(C, device="cuda", **options)
    assert GPUCB(C, **options).engine.startswith("CPU (Numba")
    assert GPUCB(C, device="cpu", **options).engine.startswith("cpu (torch")
    with pytest.raises(ValueError, match="not a torch device"):
        GPUCB(C, device="gpu0", **options)
    with pytest.raises(ValueError, match="precision applies to the torch engine"):
        GPUCB(C, precision="float32", **options)
    with pytest.warns(UserWarning, match="picks differ"):
        single = GPUCB(C, device="cpu", precision="float32", **options)
    assert single.posterior._mean.dtype == torch.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        double = GPUCB(C, device="cpu", **options)
    for engine in (single, double):
        for _ in range(5):
            i = engine.suggest()
            engine.observe(i, float(np.sin(C[i]).sum()))
    np.testing.assert_allclose(single.posterior.mean, double.posterior.mean, atol=1e-4)
