"""Acceptance checks: generic kinds, each a verdict on one run's mean curve against a band.

A check kind is a function ``(series, **parameters) -> Measurement``; ``evaluate`` turns the
measurement into a ``CheckResult`` with the verdict. Every measured value carries its Monte Carlo
standard error where one exists, and ``margin_se`` says how many standard errors the value lies
inside (+) or outside (-) the band, so a PASS or FAIL that MC noise could flip is visible.

Verdicts: PASS, FAIL, or SKIP when the run does not reach the time the criterion is about (a
smoke run with T=500 cannot say anything about t=5000).

Parameters every kind takes: ``observable`` (which of the run's recorded observables the curve is;
default: the experiment's) and ``tolerance_se`` (default 0): a value outside the band by at most
that many of its standard errors still PASSes, for bands calibrated at more paths than a reduced
profile runs (the margin in SE is always reported). Kinds that need more than one curve (the
whole-state snapshots, other observables, the system's reference values) take ``data``, the
run's ``RunData``, filled in by ``evaluate``.

Kinds registered with ``study=True`` judge a convergence study (a run with ``plan=convergence``)
instead of a mean curve: they take its ``engine.convergence.ConvergenceResult`` (errors against dt,
their SEs, the fitted order and its bootstrap interval) and no ``observable`` (a study's is its
``plan.observable``).

The kinds, by family (each module registers its kinds with ``check_kind`` when imported, so this
package imports them all and the registry is always full):

- ``curves``: a run's mean curve against the exact curve, the oracle, a band, a reference value, a
  window average or another run's curve; the run's non-finite paths and divergence along it.
- ``paths``: individual kept paths (one realisation's drift, extent, period, a path a selection rule
  picks) and the run's solver statistics.
- ``snapshots``: the whole ensemble at one time: snapshots of the paths' states (variances, densities,
  constraint residuals, a state's spectrum), statistics and spreads over every kept path, the heavy
  top's effective potential, the solvability map of the run's integrator.
- ``studies``: the ``study=True`` kinds on convergence studies.

``registry`` holds the registry (one ``CheckKind`` record per kind: its function, and the choices,
shapes and system method ``validate`` refuses a spec by), ``validate`` and ``evaluate``.
"""
from sgi_run.figures.checks import curves, paths, snapshots, studies  # noqa: F401  (they register the kinds)
from sgi_run.figures.checks.registry import (CHECK_KINDS, CheckKind, check_kind, evaluate, kind_mismatch, kinds_for,
                                             parameters, validate)

__all__ = ["CHECK_KINDS", "CheckKind", "check_kind", "evaluate", "kind_mismatch", "kinds_for", "parameters",
           "validate"]
