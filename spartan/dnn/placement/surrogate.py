"""A learned makespan model over one-hot op→device encodings (HTF-MPR's predictor).

The thesis fits gradient boosting; without scikit-learn in our dependencies we fit ridge
regression on the one-hot encoding of the movable nodes' devices, predicting log makespan
*(ours)*. :func:`kendall_distance` is the thesis's ranking score: the fraction of pairs whose
order the model gets wrong (0 = perfect ranking).

>>> import numpy as np
>>> X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
>>> y = np.array([1.0, 2.0, 3.0, 4.0])
>>> s = Surrogate(2).fit(X, y)
>>> kendall_distance(y, s.predict(X))
0.0
"""

from __future__ import annotations

import numpy as np

__all__ = ["Surrogate", "kendall_distance"]


class Surrogate:
    """Ridge regression of log(makespan) on one-hot device choices of ``k`` devices."""

    def __init__(self, k: int, alpha: float = 1.0) -> None:
        self.k, self.alpha = k, alpha
        self._coef: np.ndarray | None = None

    def _encode(self, genomes: np.ndarray) -> np.ndarray:
        g = np.asarray(genomes, dtype=np.int64)
        x = np.zeros((g.shape[0], g.shape[1] * self.k + 1))
        rows = np.repeat(np.arange(g.shape[0]), g.shape[1])
        cols = (np.arange(g.shape[1]) * self.k + g).reshape(-1)
        x[rows, cols] = 1.0
        x[:, -1] = 1.0
        return x

    def fit(self, genomes: np.ndarray, makespans: np.ndarray) -> Surrogate:
        """Fit on device vectors (rows) and their measured makespans."""
        x = self._encode(genomes)
        y = np.log(np.asarray(makespans, dtype=np.float64))
        gram = x.T @ x + self.alpha * np.eye(x.shape[1])
        self._coef = np.linalg.solve(gram, x.T @ y)
        return self

    def predict(self, genomes: np.ndarray) -> np.ndarray:
        """Predicted makespans of device vectors (rows)."""
        if self._coef is None:
            raise ValueError("Surrogate.predict called before fit")
        return np.exp(self._encode(genomes) @ self._coef)


def kendall_distance(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Normalized Kendall tau distance: fraction of discordant pairs (ties count as agreeing)."""
    a, p = np.asarray(actual, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    if len(a) < 2:
        return 0.0
    da = np.sign(a[:, None] - a[None, :])
    dp = np.sign(p[:, None] - p[None, :])
    iu = np.triu_indices(len(a), 1)
    return float((da[iu] * dp[iu] < 0).mean())
