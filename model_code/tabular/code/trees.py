"""A gradient-boosted tree ensemble held as plain NumPy arrays: loaded without pickle, scored without scikit-learn.

``train.py`` exports a fitted scikit-learn ``GradientBoostingRegressor`` into ``model.npz`` (see
``FIELDS``). Every tree is padded to a complete binary tree of depth ``depth``: node ``i`` has children
``2i + 1`` (feature value <= threshold) and ``2i + 2``, a leaf that scikit-learn reached early is a
split that always goes left, and leaf values are pre-multiplied by the learning rate. Scoring walks all
trees for all rows level by level, then adds the trees' values to the base score one tree after
another, in scikit-learn's order, so the predictions are bit-for-bit those of ``model.predict``.

Thresholds are stored as float32 rounded towards minus infinity: scikit-learn compares float32 feature
values with float64 thresholds, and for a float32 ``x``, ``x <= t`` holds exactly when
``x <= float32_floor(t)``, so the comparison can stay in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FORMAT = "smkit-forest/1"
FIELDS = ("format", "feature_names", "feature", "threshold", "leaf_value", "base_score")


class ForestError(ValueError):
    """``model.npz`` is missing, from another format, or built for other features."""


@dataclass(frozen=True)
class Forest:
    """Complete binary trees of one depth; ``feature``/``threshold`` are (trees, 2**depth - 1)."""

    feature_names: tuple[str, ...]
    feature: np.ndarray
    threshold: np.ndarray
    leaf_value: np.ndarray
    base_score: float

    @property
    def n_trees(self) -> int:
        return int(self.feature.shape[0])

    @property
    def depth(self) -> int:
        return int(self.leaf_value.shape[1]).bit_length() - 1


def load_forest(path: str, feature_names: tuple[str, ...]) -> Forest:
    """Read and check ``model.npz`` (no pickle); the model must expect exactly ``feature_names``."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in FIELDS}
    except (OSError, KeyError, ValueError) as exc:
        raise ForestError(f"{path}: not a tree ensemble file ({exc}); re-run train.py") from exc
    if str(arrays["format"]) != FORMAT:
        raise ForestError(f"{path}: format {str(arrays['format'])!r}, expected {FORMAT!r}; re-run train.py")
    names = tuple(str(n) for n in arrays["feature_names"])
    if names != feature_names:
        raise ForestError(f"{path}: trained on features {names}, but this handler parses {feature_names}")
    feature, threshold, leaf = arrays["feature"], arrays["threshold"], arrays["leaf_value"]
    if feature.ndim != 2 or leaf.ndim != 2:
        raise ForestError(
            f"{path}: trees must be 2-D arrays, got {feature.shape} and {leaf.shape}; re-run train.py"
        )
    internal, leaves = feature.shape[1], leaf.shape[1]
    if threshold.shape != feature.shape or leaf.shape[0] != feature.shape[0] or leaves != internal + 1:
        raise ForestError(
            f"{path}: inconsistent tree shapes {feature.shape}, {threshold.shape}, {leaf.shape}"
        )
    if leaves & (leaves - 1) or feature.min(initial=0) < 0 or feature.max(initial=0) >= len(names):
        raise ForestError(f"{path}: trees are not complete or name a feature out of range; re-run train.py")
    return Forest(
        feature_names=names,
        feature=np.ascontiguousarray(feature, dtype=np.intp),
        threshold=np.ascontiguousarray(threshold, dtype=np.float32),
        leaf_value=np.ascontiguousarray(leaf, dtype=np.float64),
        base_score=float(arrays["base_score"]),
    )


class Scorer:
    """Scores rows with a :class:`Forest`; index arrays depend only on the row count and are cached."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self._feature = forest.feature.ravel()
        self._threshold = forest.threshold.ravel()
        self._leaf = forest.leaf_value.ravel()
        internal = forest.feature.shape[1]
        # Position p after the last level is 2**depth - 1 + leaf; this maps it into the flat leaf array.
        self._leaf_index = (np.arange(forest.n_trees, dtype=np.intp) * forest.leaf_value.shape[1] - internal)[
            :, None
        ]
        self._per_tree = np.arange(forest.n_trees, dtype=np.intp)[:, None] * internal
        self._base: dict[int, np.ndarray] = {}
        self._offsets: dict[int, np.ndarray] = {}

    def _for_rows(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(trees, rows) offsets of each tree's root in the flat comparison array, and the base scores."""
        offsets = self._offsets.get(n_rows)
        if offsets is None:
            offsets = self._per_tree + np.arange(n_rows, dtype=np.intp) * self._feature.size
            base = np.full((1, n_rows), self.forest.base_score)
            if len(self._offsets) < 64:
                self._offsets[n_rows], self._base[n_rows] = offsets, base
            return offsets, base
        return offsets, self._base[n_rows]

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """One float64 prediction per row of the (n, n_features) matrix ``rows``."""
        # Every node's comparison for every row at once: (rows, trees * internal nodes), flattened.
        goes_right = np.greater(rows.astype(np.float32).take(self._feature, axis=1), self._threshold).ravel()
        offsets, base = self._for_rows(rows.shape[0])
        position = goes_right.take(offsets) + 1  # level 1: children of the roots are 1 and 2
        for _ in range(self.forest.depth - 1):
            position = 2 * position + 1 + goes_right.take(offsets + position)
        # (1 + trees, rows) summed over the first axis: one tree after another, as scikit-learn adds them.
        return np.concatenate((base, self._leaf.take(position + self._leaf_index))).sum(axis=0)
