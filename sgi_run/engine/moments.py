"""Count, mean and sum of squared deviations, merged exactly across shards (Chan et al. 1979)."""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Moments:
    """Arrays of shape (times, observables)."""
    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @classmethod
    def empty(cls, shape) -> Moments:
        return cls(np.zeros(shape, np.int64), np.zeros(shape), np.zeros(shape))

    def merge(self, other: Moments) -> Moments:
        n = self.count + other.count
        safe = np.maximum(n, 1)
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / safe
        m2 = self.m2 + other.m2 + delta**2 * self.count * other.count / safe
        # Empty cells keep mean 0 (not NaN) so that later merges stay exact.
        return Moments(n, np.where(n > 0, mean, 0.0), np.where(n > 0, m2, 0.0))

    @property
    def mean_or_nan(self) -> np.ndarray:
        return np.where(self.count > 0, self.mean, np.nan)

    @property
    def var(self) -> np.ndarray:
        """Unbiased sample variance (NaN with fewer than two values)."""
        return np.where(self.count > 1, self.m2 / np.maximum(self.count - 1, 1), np.nan)

    @property
    def sem(self) -> np.ndarray:
        """Monte Carlo standard error of the mean."""
        return np.sqrt(self.var / np.maximum(self.count, 1))
