"""The Adult loader: a9a layout, consistent columns across splits, unit-norm rows, labels."""

import numpy as np

from shared.datasets.adult import MAX_ONES, feature_names, load_adult


def test_shapes_labels_and_norms(shared_data_file):
    shared_data_file("adult.data")
    shared_data_file("adult.test")
    X, y = load_adult("train")
    Xt, yt = load_adult("test")
    assert X.shape == (32_561, 123) and Xt.shape == (16_281, 123)  # adult.test's header line is skipped
    assert len(feature_names()) == 123
    assert set(np.unique(y)) == {0, 1} and set(np.unique(yt)) == {0, 1}
    # The known class balance: 24.1% / 23.6% earn >50K (test labels end with '.').
    assert abs(y.mean() - 0.2408) < 1e-3 and abs(yt.mean() - 0.2362) < 1e-3
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 1.0 + 1e-12
    # Rows with a missing value ('?') lose one or more bits; all other rows have exactly 14.
    binary, _ = load_adult("train", unit_norm=False)
    ones = binary.sum(axis=1)
    assert set(np.unique(binary)) == {0.0, 1.0}
    assert ones.max() == MAX_ONES and (ones < MAX_ONES).sum() == 2_399


def test_each_group_is_one_hot_and_cached_copies_are_independent(shared_data_file):
    shared_data_file("adult.data")
    binary, _ = load_adult("train", unit_norm=False)
    names = feature_names()
    sex = [i for i, name in enumerate(names) if name.startswith("sex=")]
    age = [i for i, name in enumerate(names) if name.startswith("age#")]
    assert np.all(binary[:, sex].sum(axis=1) == 1) and np.all(binary[:, age].sum(axis=1) == 1)
    binary[:] = -1.0
    again, _ = load_adult("train", unit_norm=False)
    assert again.min() == 0.0


def test_linearly_predictive(shared_data_file):
    shared_data_file("adult.data")
    shared_data_file("adult.test")
    from sklearn.linear_model import LogisticRegression

    X, y = load_adult("train")
    Xt, yt = load_adult("test")
    accuracy = LogisticRegression(C=10.0, max_iter=1000).fit(X, y).score(Xt, yt)
    assert accuracy > 0.84  # a9a logistic regression is about 85%; the majority class is 76%
