"""sgi-run: Monte Carlo experiments with structure-preserving stochastic integrators.

Public, scriptable entry points (the CLI uses the same ones):

    cfg = sgi_run.compose(["system=kubo", "integrator=dirk", "plan.dt=0.5"])
    result = sgi_run.run(cfg)            # runs (or resumes) and writes ensemble.h5
    ens = sgi_run.load(result.path)      # plain numpy arrays
"""
__version__ = "0.1.0"

# Imported lazily so that ``import sgi_run.systems`` does not pull in Hydra, h5py or matplotlib.
_PUBLIC = {"ConfigError": "sgi_run.core.errors", "compose": "sgi_run.config",
           "run": "sgi_run.runner", "load": "sgi_run.store"}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'sgi_run' has no attribute {name!r}")


__all__ = ["ConfigError", "compose", "run", "load", "__version__"]
