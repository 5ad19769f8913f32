"""sgi-run: Monte Carlo experiments with structure-preserving stochastic integrators.

Public, scriptable entry points (the ``sgi-run`` command uses the same ones):

- ``compose(overrides)``: the validated run config for command-line overrides; nothing is computed.
- ``run(cfg)``: runs it (or resumes an interrupted run, or reuses the finished one) and writes its
  ``ensemble.h5``; returns a ``RunResult`` (``.path``, ``.ensemble``, ``.summary``).
- ``load(path)``: an ``ensemble.h5`` (or its run directory) as an ``Ensemble`` of numpy arrays.
- ``Ensemble``: a run's statistics: ``mean``, ``var``, ``sem`` per observable, kept ``paths``,
  ``snapshot``, ``diagnostics``, ``config``, ``to_xarray``.
- ``ConfigError``: what ``compose`` raises for a value that is not allowed (one line).

Example:

    >>> import sgi_run
    >>> cfg = sgi_run.compose(["system=kubo", "integrator=midpoint", "plan.paths=100", "plan.T=2"])
    >>> result = sgi_run.run(cfg)
    >>> ens = sgi_run.load(result.path)
    >>> ens.t
    array([0., 1., 2.])
    >>> ens.mean("H").shape, ens.sem("H").shape
    ((3,), (3,))
"""
__version__ = "0.1.0"

# Imported lazily so that ``import sgi_run.systems`` does not pull in Hydra, h5py or matplotlib.
_PUBLIC = {"ConfigError": "sgi_run.core.errors", "compose": "sgi_run.config",
           "run": "sgi_run.runner", "load": "sgi_run.store", "Ensemble": "sgi_run.store"}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'sgi_run' has no attribute {name!r}")


def __dir__():
    """The lazy names too: ``help(sgi_run)`` lists what ``dir`` shows."""
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = ["ConfigError", "compose", "run", "load", "Ensemble", "__version__"]
