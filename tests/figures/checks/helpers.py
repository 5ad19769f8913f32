"""Synthetic curves, runs and convergence studies the check-kind tests share."""
import numpy as np

from sgi_run.figures.checks import evaluate, validate
from sgi_run.figures.results import RunData, Series
from sgi_run.systems import VlasovLenardBernstein

T = np.arange(0.0, 101.0, 10.0)
EXACT = 2 * np.exp(-0.01 * T)


def series(mean, sem=1e-3, exact=EXACT):
    return Series(T, np.asarray(mean, float), np.full_like(T, sem) if np.isscalar(sem) else sem, exact)


def check(kind, s, **params):
    spec = {"id": "c", "kind": kind, **params}
    validate(spec, "test")
    return evaluate(spec, "run", s)


# --- kinds that look at more of a run (RunData): windows, other observables, snapshots --------------
LB = VlasovLenardBernstein()


def run_data(curves: dict, snapshot=None, paths=1000):
    return RunData({k: series(v, exact=None) if not isinstance(v, Series) else v for k, v in curves.items()},
                   "H", LB, (lambda t: snapshot) if snapshot is not None else (lambda t: None), paths)


def data_check(kind, data, **params):
    spec = {"id": "c", "kind": kind, **params}
    validate(spec, "test")
    return evaluate(spec, "run", data)


# --- convergence studies (plan=convergence) ---------------------------------------------------------
DTS = np.array([0.5, 0.25, 0.125, 0.0625])


def study(error, se=1e-4, order=2.0, ci=(1.9, 2.1), note="", kind="weak"):
    from sgi_run.engine.convergence import ConvergenceResult
    error = np.asarray(error, float)
    se = np.full_like(error, se) if np.isscalar(se) else np.asarray(se, float)
    return ConvergenceResult(kind, "exact", "independent", DTS, error, se, np.abs(error) > 2 * se, order, ci,
                             np.zeros(len(DTS), int), 1000, note)


WEAK = [-1.2e-2, -2.8e-3, -6.5e-4, -1.6e-4]     # SRKw2 on Kubo, the project's exact regression values


# --- single realisations: an observable along a kept path ---------------------------------------------
def kept(path, *more):
    """A one-path run (mean = the path, no SE) with its kept path(s)."""
    paths = np.array([path, *more], float)
    return Series(T, paths[0], np.full_like(T, np.nan), None, kept=paths)
