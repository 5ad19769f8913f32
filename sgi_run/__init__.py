"""sgi-run: Monte Carlo experiments with structure-preserving stochastic integrators.

Objects (the systems are classes in ``sgi_run.systems``, keyword arguments their parameters):

- ``simulate(system, integrator, plan)``: runs an ensemble (or a convergence study) through the engine, the
  run cache and the files of the ``sgi-run`` command; returns a ``RunResult`` (``.ensemble``, ``.path``).
- ``integrator(name, **options)``: a bundled method (conf/integrator/), its options changed.
- ``plan(**keys)``, ``convergence_plan(**keys)``: sampling plans, conf/plan/'s defaults changed.
- ``formula_system(kind, **keys)``: a system written as formulas.
- ``register_system(name, cls)``: a ``System`` class of one's own, runnable by ``simulate``.
- ``load_module(path)``: a Python file of one's own that registers systems (``sgi-run --module FILE``).
- ``step(system, integrator, z, dt, xi)``, ``draw(...)``, ``initial_state(...)``: one step, its random
  variables and a path's start, pure JAX for one's own ``jit``/``vmap`` code (float64 on needed).

Command-line overrides, as ``sgi-run`` takes them:

- ``compose(overrides)``: the validated run config; nothing is computed. ``run(cfg)``: runs it.

Results:

- ``load(path)``: an ``ensemble.h5`` (or its run directory) as an ``Ensemble`` of numpy arrays.
- ``Ensemble``: a run's statistics: ``mean``, ``var``, ``sem`` per observable, kept ``paths``,
  ``snapshot``, ``diagnostics``, ``config``, ``to_xarray``.
- ``RunResult``: what ``simulate`` and ``run`` return. ``ConfigError``: every refusal (one line).

Importing sgi-run leaves JAX's settings as they were; ``simulate``, ``run`` and ``compose`` compute in float64
whatever they are (``jax.enable_x64`` for their own work). Code of one's own that calls ``step`` needs
``jax.config.update("jax_enable_x64", True)`` before it makes an array.

Example:

    >>> import sgi_run
    >>> from sgi_run.systems import Kubo
    >>> result = sgi_run.simulate(Kubo(), sgi_run.integrator("midpoint"), sgi_run.plan(paths=100, T=2))
    >>> ens = sgi_run.load(result.path)
    >>> ens.t
    array([0., 1., 2.])
    >>> ens.mean("H").shape, ens.sem("H").shape
    ((3,), (3,))
"""
from sgi_run.version import __version__

# Imported whole (help(sgi_run) shows them all): that adds Hydra and h5py to `import sgi_run.systems`, about
# 0.5 s once per process beside JAX's own 1.2 s (measured on the 2-core development machine).
from sgi_run.api import (compose, convergence_plan, draw, formula_system, initial_state, integrator, load_module,
                         plan, register_system, run, simulate, step)
from sgi_run.core.errors import ConfigError
from sgi_run.runner import RunResult
from sgi_run.store import Ensemble, load

__all__ = ["simulate", "integrator", "plan", "convergence_plan", "formula_system", "register_system", "load_module", "step", "draw",
           "initial_state", "compose", "run", "load", "Ensemble", "RunResult", "ConfigError", "__version__"]
