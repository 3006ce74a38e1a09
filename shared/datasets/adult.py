"""UCI Adult (census income) as 123 binary features, the LIBSVM a9a layout, with rows of ℓ2 norm ≤ 1.

Encoding (fixed in advance from the public schema in ``adult.names``, never fitted to the data, so
the train and test splits get identical columns and the scaling is public in the DP sense):

* the 8 categorical columns are one-hot encoded over the category lists of ``adult.names``; a missing
  value (``?``) gives an all-zero group (as in a9a);
* the 6 continuous columns are quantised like a9a — age, fnlwgt, education-num and hours-per-week into
  5 bins, capital-gain and capital-loss into "zero / positive" — with the public bin edges below
  (a9a used training-set quantiles; we fix round-number edges close to them so nothing is learnt from
  the data);
* every row therefore has at most 14 ones; dividing by √14 gives ‖x‖₂ ≤ 1 (= 1 without missing values),
  the norm bound DP-SGD clipping and output perturbation assume (``unit_norm=False`` keeps 0/1).

Labels: y = 1 for income ``>50K`` (the test file's trailing full stops are stripped), else 0.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from shared.datasets.paths import data_file

SPLIT_FILES = {"train": "adult.data", "test": "adult.test"}

CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"),
    "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
                  "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": ("United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
                       "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
                       "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
                       "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
                       "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
}

# Inner bin edges: a value v falls in bin searchsorted(edges, v, side="right").
BIN_EDGES: dict[str, tuple[float, ...]] = {
    "age": (26.0, 34.0, 42.0, 51.0),
    "fnlwgt": (110_000.0, 160_000.0, 200_000.0, 260_000.0),
    "education-num": (9.0, 10.0, 11.0, 13.0),
    "capital-gain": (1.0,),
    "capital-loss": (1.0,),
    "hours-per-week": (35.0, 40.0, 41.0, 50.0),
}

COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country")

MAX_ONES = len(COLUMNS)  # one active bit per column at most


def feature_names() -> list[str]:
    """Names of the 123 output columns, in order (``column=value`` or ``column#bin``)."""
    names: list[str] = []
    for column in COLUMNS:
        if column in CATEGORIES:
            names += [f"{column}={value}" for value in CATEGORIES[column]]
        else:
            names += [f"{column}#{b}" for b in range(len(BIN_EDGES[column]) + 1)]
    return names


def _column_offsets() -> dict[str, int]:
    offsets, position = {}, 0
    for column in COLUMNS:
        offsets[column] = position
        position += len(CATEGORIES[column]) if column in CATEGORIES else len(BIN_EDGES[column]) + 1
    return offsets


@lru_cache(maxsize=2)
def _load_binary(split: str) -> tuple[np.ndarray, np.ndarray]:
    offsets = _column_offsets()
    lookup = {column: {value: i for i, value in enumerate(values)} for column, values in CATEGORIES.items()}
    rows: list[list[int]] = []
    labels: list[int] = []
    with open(data_file(SPLIT_FILES[split]), encoding="utf-8") as handle:
        for line in handle:
            fields = [field.strip() for field in line.split(",")]
            if len(fields) != len(COLUMNS) + 1 or fields[0] == "age":  # blank lines and adult.test's header
                continue
            active = []
            for column, value in zip(COLUMNS, fields):
                if column in CATEGORIES:
                    if value in lookup[column]:  # '?' (missing) leaves the group at zero
                        active.append(offsets[column] + lookup[column][value])
                else:
                    active.append(offsets[column] + int(np.searchsorted(BIN_EDGES[column], float(value), "right")))
            rows.append(active)
            labels.append(1 if fields[-1].rstrip(".") == ">50K" else 0)
    X = np.zeros((len(rows), len(feature_names())))
    for i, active in enumerate(rows):
        X[i, active] = 1.0
    return X, np.asarray(labels, dtype=np.int64)


def load_adult(split: str = "train", *, unit_norm: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Adult as ``(X, y)``: X is n × 123 (a9a layout), y ∈ {0, 1} (1 = income above $50K).

    ``split`` is ``"train"`` (adult.data, 32,561 rows) or ``"test"`` (adult.test, 16,281 rows).
    With ``unit_norm`` (default) X is divided by √14 so every row has ℓ2 norm ≤ 1. Parsed once per
    split and cached; each call returns fresh copies. Raises ``DatasetUnavailable`` when the file is absent.
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    X, y = _load_binary(split)
    scale = 1.0 / np.sqrt(MAX_ONES) if unit_norm else 1.0
    return X * scale, y.copy()
