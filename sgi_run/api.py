"""sgi-run from Python with objects: a system, an integrator and a plan, run by ``simulate`` through the engine,
the run cache and the files of the ``sgi-run`` command; and one step of a method, for one's own JAX code.

Each object becomes its config node (``config.run_config``), so a run made here is the run the command line
makes of the same values: the same validation and one-line ``ConfigError`` refusals, the same config hash, run
directory and cache. ``sgi_run`` exports these names; this module is where they are written.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType
from collections.abc import Callable, Iterable, Mapping

from omegaconf import DictConfig

from sgi_run import config, runner
from sgi_run.core import jax_setup, noise
from sgi_run.core.errors import ConfigError
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan
from sgi_run.integrators import Integrator
from sgi_run.runner import RunResult
from sgi_run.systems import SYSTEMS, System


# --- the run's pieces ------------------------------------------------------------------------------------------
@jax_setup.scope()    # a tableau's order conditions are computed (in float64) as it is built
def integrator(name: str, **options) -> Integrator:
    """The bundled integrator ``name`` (conf/integrator/<name>.yaml, as ``integrator=<name>`` on the command line)
    with its options changed by keyword (``tol``, ``max_iter``, ``solver``, ... : the keys of that file).

    An integrator of one's own is its family's class with a tableau object (``sgi_run.integrators.FAMILIES``:
    family -> (class, tableau class)), e.g. ``LdAPartitionedRK(name="mine", tableau=LdAPRKTableau(...))``.

    Example:

        >>> import sgi_run
        >>> sgi_run.integrator("midpoint", tol=1e-10).tol
        1e-10
        >>> sgi_run.integrator("midpont")
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: integrator='midpont' is not allowed: one of [...]
        >>> sgi_run.integrator("midpoint", tolerance=1e-10)
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: integrator.tolerance=1e-10 is not allowed: a known key; 'integrator' has [...]
    """
    return config.build_integrator(config.group_node("integrator", name, options))


def plan(**keys) -> Plan:
    """An ensemble's sampling plan: conf/plan/default.yaml's keys (``paths``, ``dt``, ``T``, ``output_dt``,
    ``observables``, ``keep_paths``, ``seed``, ``snapshots``, ...) with the values given by keyword.

    Example:

        >>> import sgi_run
        >>> p = sgi_run.plan(paths=100, T=2)
        >>> p.paths, p.dt, p.steps, p.times
        (100, 0.1, 20, array([0., 1., 2.]))
        >>> sgi_run.plan(paths=0)
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: plan.paths=0 is not allowed: an integer in [1, 2^32) ...
    """
    return Plan.from_mapping(config.group_node("plan", "default", keys))


# simulate's arguments are named integrator and plan: what it calls them by.
_named_integrator, _default_plan = integrator, plan


def convergence_plan(**keys) -> ConvergencePlan:
    """A convergence study's plan: conf/plan/convergence.yaml's keys (``paths``, ``T``, ``dts``, ``error``,
    ``reference``, ...) with the values given by keyword; ``simulate`` then returns its errors and fitted order.

    Example:

        >>> import sgi_run
        >>> study = sgi_run.convergence_plan(paths=200, dts=[0.1, 0.05], T=1.0)
        >>> study.dts, study.error
        ((0.1, 0.05), 'strong')
    """
    return ConvergencePlan.from_mapping(config.group_node("plan", "convergence", keys))


FORMULA_KINDS = tuple(sorted(name for name, cls in SYSTEMS.items() if cls.open_parameters))


@jax_setup.scope()    # its formulas are compiled and its random starts checked as it is built
def formula_system(kind: str = "custom", **keys) -> System:
    """A system written as formulas (``sgi_run.systems.formula``): ``kind`` is ``custom`` (canonical: ``H``,
    ``noise``, ``F``, ``noise_forcing``, ``dof``, ``q0``, ``p0``), ``custom_langevin`` (``potential``, ...),
    ``custom_constrained_langevin`` (``constraints`` too) or ``custom_lie_poisson`` (``algebra``, ``h``, ...), the
    keys of conf/system/<kind>.yaml. Any other keyword is a named parameter its formulas use. Keys not given take
    the class's defaults. Checked as ``system=<kind> system.<key>=<value>`` is.

    Example:

        >>> import sgi_run
        >>> pendulum = sgi_run.formula_system(H="p**2/2 - k*cos(q)", noise=["0.1*p"], k=2.0)
        >>> pendulum.parameters
        (('k', 2.0),)
        >>> sgi_run.formula_system(H="p**2/2 - cos(q", noise=["0.1*p"])
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: system.H='p**2/2 - cos(q' is not allowed: ...
    """
    if kind not in FORMULA_KINDS:
        raise ConfigError("kind", kind, f"one of {list(FORMULA_KINDS)}")
    return config.build_system({"name": kind, **config.config_value(keys)})


def register_system(name: str, cls: type[System]) -> None:
    """Make a system class of one's own runnable by ``simulate`` under the config name ``name`` (its runs are
    filed under it): ``sgi_run.systems.register``, which says what a class must be and what it means for dask
    workers.

    Example:

        >>> import dataclasses, jax.numpy as jnp, sgi_run
        >>> from sgi_run.systems import CanonicalSystem
        >>> @dataclasses.dataclass(frozen=True)
        ... class Quartic(CanonicalSystem):
        ...     k: float = 1.0
        ...     sigma: float = 0.1
        ...     def hamiltonian(self, q, p):
        ...         return jnp.sum(p**2) / 2 + self.k * jnp.sum(q**4) / 4
        ...     def noise_hamiltonians(self, q, p):
        ...         return jnp.array([self.sigma * jnp.sum(q)])
        ...     def initial_state(self, key):
        ...         return jnp.array([1.0, 0.0])
        >>> sgi_run.register_system("quartic", Quartic)
        >>> result = sgi_run.simulate(Quartic(k=0.5), "midpoint", sgi_run.plan(paths=20, T=1))
        >>> result.ensemble.attrs["system"], result.run_dir.parent.name
        ('quartic', 'quartic-midpoint')
    """
    from sgi_run.systems import register
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        config.check_parameter_types(cls)     # a parameter's annotation no config value has: a TypeError, now
    register(name, cls)


def load_module(path: str | Path) -> ModuleType:
    """Import a Python file of one's own whose ``register_system`` calls make its systems runnable, as
    ``sgi-run --module FILE`` and ``sgi-figures --module FILE`` do before they compose their runs: a config of
    one's own (``--config-dir``) then chooses such a system by its registered name (``system.name``). The file is
    imported under its own name (its stem), so a dask worker can import it again where the file's directory is
    on its ``PYTHONPATH``. A run of such a system is reused from the cache only while the file is unchanged
    (``provenance.class_digest``).

    Example:

        >>> import pathlib, tempfile, sgi_run
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "my_quartic.py").write_text(
        ...     "import dataclasses, jax.numpy as jnp, sgi_run\\n"
        ...     "from sgi_run.systems import CanonicalSystem\\n"
        ...     "@dataclasses.dataclass(frozen=True)\\n"
        ...     "class Quartic(CanonicalSystem):\\n"
        ...     "    sigma: float = 0.1\\n"
        ...     "    def hamiltonian(self, q, p):\\n"
        ...     "        return jnp.sum(p**2) / 2 + jnp.sum(q**4) / 4\\n"
        ...     "    def noise_hamiltonians(self, q, p):\\n"
        ...     "        return jnp.array([self.sigma * jnp.sum(q)])\\n"
        ...     "    def initial_state(self, key):\\n"
        ...     "        return jnp.array([1.0, 0.0])\\n"
        ...     "sgi_run.register_system('my_quartic', Quartic)\\n")
        >>> module = sgi_run.load_module(folder / "my_quartic.py")
        >>> module.__name__, sgi_run.simulate(module.Quartic(), "midpoint", sgi_run.plan(paths=20, T=1)).run_dir.parent.name
        ('my_quartic', 'my_quartic-midpoint')
    """
    import importlib.util
    import sys

    path = Path(path)
    if not (path.is_file() and path.suffix == ".py"):
        raise ConfigError("--module", str(path), "a Python file (.py) that registers systems (sgi_run.register_system)")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path.resolve():
        raise ConfigError("--module", str(path), f"a file whose name is no module already imported ({name} is "
                          f"{getattr(loaded, '__file__', None) or 'built in'}): rename it")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _executor_node(executor: str | Mapping) -> dict:
    """``executor="local"`` (a name: conf/executor/<name>.yaml), or a mapping with its ``name`` and options."""
    options = dict(executor) if isinstance(executor, Mapping) else {"name": executor}
    return config.group_node("executor", options.pop("name", "local"), options)


# --- running ----------------------------------------------------------------------------------------------------
def simulate(system: System, integrator: Integrator | str, plan: Plan | ConvergencePlan | None = None, *,
             output_root: str | Path = "outputs/runs", executor: str | Mapping = "local", cache: str = "reuse",
             progress: bool = False, run_dir: str | Path | None = None) -> RunResult:
    """Run ``integrator`` (an object, or a bundled method's name) on ``system`` with ``plan`` (default: ``plan()``)
    as ``sgi-run`` runs its config: validated first (one-line ``ConfigError``), a finished run of the same config
    reused, an interrupted one resumed, ``ensemble.h5`` and the summary written to
    ``<output_root>/<system>-<integrator>/<config hash>`` (or ``run_dir``). Returns the ``RunResult``: ``.ensemble``
    (the statistics, an ``Ensemble``), ``.path``, ``.summary``, ``.cached``; with a ``convergence_plan``, a study's
    (``.result``: the errors and the fitted order). ``executor``: ``"local"``, ``"dask"``, ``"slurm"`` or a mapping
    ``{"name": "dask", "workers": 4, ...}`` (conf/executor/'s keys); ``cache``: ``reuse``, ``refresh_stale`` or
    ``off``; ``progress``: a bar or lines on stderr. Computes in float64 whatever the caller's JAX setting
    (``jax.enable_x64`` for its own work, put back after).

    Example:

        >>> import sgi_run
        >>> from sgi_run.systems import Kubo
        >>> result = sgi_run.simulate(Kubo(nu=0.01), sgi_run.integrator("midpoint"), sgi_run.plan(paths=100, T=2))
        >>> result.ensemble.t, result.ensemble.mean("H").shape
        (array([0., 1., 2.]), (3,))
        >>> result.run_dir.parent.name
        'kubo-midpoint'
        >>> sgi_run.simulate(Kubo(beta=-1), "midpoint", sgi_run.plan(paths=100, T=2))
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: system.beta=-1.0 is not allowed: beta >= 0
    """
    method = _named_integrator(integrator) if isinstance(integrator, str) else integrator
    cfg = config.run_config(system, method, _default_plan() if plan is None else plan, _executor_node(executor),
                            output_root=str(output_root), cache=cache, progress="on" if progress else "off")
    return run(cfg, run_dir)


def compose(overrides: Iterable[str] = (), config_dir: str | Path | None = None) -> DictConfig:
    """The validated run config of command-line overrides (``["system=kubo", "plan.paths=100"]``); nothing is
    computed. ``config_dir`` adds a directory of one's own config files (``--config-dir``: e.g. its
    ``system/<name>.yaml``). Raises ``ConfigError`` (one line: the key, the value, what is allowed) for bad input.

    Example:

        >>> import sgi_run
        >>> cfg = sgi_run.compose(["integrator=dirk", "plan.paths=100"])
        >>> cfg.system.name, cfg.integrator.name, cfg.plan.paths
        ('kubo', 'dirk', 100)
        >>> sgi_run.compose(["plan.paths=0"])
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: plan.paths=0 is not allowed: ...
    """
    source = config.ConfigSource(added=None if config_dir is None else str(config_dir))
    return config.compose(overrides, source)


def run(cfg: DictConfig, run_dir: str | Path | None = None, *, progress: bool | None = None,
        on_shard_done: Callable | None = None) -> RunResult:
    """Run the config ``cfg`` (from ``compose``, or an ``Ensemble``'s ``.config``) as ``sgi-run`` does: an ensemble,
    or a convergence study (``plan=convergence``), its ``ensemble.h5`` (``convergence.h5``) and summary written to
    ``run_dir`` (default: ``<output_root>/<system>-<integrator>/<config hash>``). A finished run of the same config
    is reused (``cached``), an interrupted one resumes. ``progress`` overrides ``cfg.progress``;
    ``on_shard_done(shard)`` is called as each shard finishes (an ``engine.simulate.ShardResult``: ``.shard``,
    ``.paths``, ``.wall_time``, ...). Raises ``ConfigError`` for what the config cannot run.

    Example:

        >>> import sgi_run
        >>> result = sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"]))
        >>> result.path.name, result.ensemble.attrs["paths"]
        ('ensemble.h5', 100)
        >>> sgi_run.run(result.ensemble.config).cached      # the same config again: nothing computed
        True
    """
    return runner.run(cfg, run_dir, progress=progress, on_shard_done=on_shard_done)


# --- one step, inside one's own JAX code ------------------------------------------------------------------------
def step(system: System, integrator: Integrator, z, dt, xi):
    """One step of ``integrator`` on ``system`` from one path's state ``z``: the engine's own step
    (``Integrator.advance``), a pure function to ``jax.jit``, ``jax.vmap`` (over paths) or ``jax.lax.scan`` (over
    steps) in one's own code. ``xi`` holds the step's random variables, ``draw``'s shape ``(rows, noises)``: row 0
    the Wiener increments dW, row 1 (the methods that take it) dZ. Needs float64 on in the caller's process
    (``jax.config.update("jax_enable_x64", True)`` before making arrays): refused otherwise.

    Example:

        >>> import jax, jax.numpy as jnp, sgi_run
        >>> from sgi_run.systems import Kubo
        >>> jax.config.update("jax_enable_x64", True)
        >>> kubo, midpoint = Kubo(), sgi_run.integrator("midpoint")
        >>> z0 = jax.vmap(lambda p: sgi_run.initial_state(kubo, 0, p))(jnp.arange(4))
        >>> xi = jax.vmap(lambda p: sgi_run.draw(kubo, midpoint, 0, p, 0, 0.1))(jnp.arange(4))
        >>> z1 = jax.jit(jax.vmap(lambda z, x: sgi_run.step(kubo, midpoint, z, 0.1, x)))(z0, xi)
        >>> z1.shape, z1.dtype
        ((4, 2), dtype('float64'))
    """
    jax_setup.require_float64()
    return integrator.advance(system, z, dt, xi)[0]


def draw(system: System, integrator: Integrator, seed, path, step, dt):
    """The random variables of step number ``step`` (of size ``dt``) of path ``path`` in a run with
    ``plan.seed=seed``, as the engine draws them for ``integrator`` on ``system`` (untruncated, on the step's own
    grid: ``plan.truncate`` null, ``plan.brownian_refine`` 1): ``(rows, system.noises)``, ``step``'s ``xi``.
    Every argument but the system and the integrator may be traced (``jax.vmap`` over paths).

    Example:

        >>> import jax, sgi_run
        >>> from sgi_run.systems import Kubo
        >>> jax.config.update("jax_enable_x64", True)
        >>> sgi_run.draw(Kubo(), sgi_run.integrator("midpoint"), 0, 0, 0, 0.1).shape
        (1, 1)
    """
    jax_setup.require_float64()
    key = noise.noise_key(noise.path_keys(seed, path, 1)[0])
    return noise.increments(integrator.noise_kind, key, step, dt, system.noises)


def initial_state(system: System, seed, path):
    """Path ``path``'s initial state in a run with ``plan.seed=seed``, drawn as the engine draws it (a random
    start from the path's own stream).

    Example:

        >>> import jax, sgi_run
        >>> from sgi_run.systems import Kubo
        >>> jax.config.update("jax_enable_x64", True)
        >>> sgi_run.initial_state(Kubo(q0=1.5), 0, 0)
        Array([1.5, 0. ], dtype=float64)
    """
    jax_setup.require_float64()
    return system.initial_state(noise.init_key(noise.path_keys(seed, path, 1)[0]))
