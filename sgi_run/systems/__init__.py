"""Systems: pure JAX physics, each a frozen dataclass whose fields are its parameters (keyword arguments).

``SYSTEMS`` maps the config name (``system.name``) to its class; ``register(name, cls)`` adds a class of
one's own, so that ``sgi_run.simulate`` runs it (its runs are filed under that name).

Example:

    >>> from sgi_run.systems import Kubo, SYSTEMS
    >>> Kubo(nu=0.0)
    Kubo(beta=0.5, nu=0.0, q0=2.0, p0=0.0)
    >>> SYSTEMS["kubo"] is Kubo
    True
"""
import dataclasses

from sgi_run.core.errors import ConfigError
from sgi_run.systems.base import System
from sgi_run.systems.canonical import CanonicalSystem
from sgi_run.systems.formula import (ConstrainedLangevinFormulaSystem, FormulaSystem, LangevinFormulaSystem,
                                    LiePoissonFormulaSystem)
from sgi_run.systems.heavy_top import HeavyTop
from sgi_run.systems.kubo import Kubo
from sgi_run.systems.lie_poisson import LiePoissonSystem
from sgi_run.systems.manakov import Manakov
from sgi_run.systems.point_vortices import PointVortices
from sgi_run.systems.rigid_body import RigidBody
from sgi_run.systems.sine_euler import SineEuler
from sgi_run.systems.langevin import (CirclePendulum, ConstrainedLangevinSystem, LangevinDoubleWell, LangevinHarmonic,
                                     LangevinSystem, SphericalPendulum)
from sgi_run.systems.van_der_pol import VanDerPol
from sgi_run.systems.vlasov import VlasovLenardBernstein, VlasovLorentz
from sgi_run.systems.zeitlin import ZeitlinEuler

SYSTEMS: dict[str, type[System]] = {
    "kubo": Kubo,
    "van_der_pol": VanDerPol,
    "vlasov_lenard_bernstein": VlasovLenardBernstein,
    "vlasov_lorentz": VlasovLorentz,
    "langevin_double_well": LangevinDoubleWell,
    "langevin_harmonic": LangevinHarmonic,
    "spherical_pendulum": SphericalPendulum,
    "circle_pendulum": CirclePendulum,
    "heavy_top": HeavyTop,
    "rigid_body": RigidBody,
    "sine_euler": SineEuler,
    "manakov": Manakov,
    "point_vortices": PointVortices,
    "zeitlin_euler": ZeitlinEuler,
    # Formulas of the config (systems.formula): conf/system/custom.yaml, custom_langevin.yaml,
    # custom_constrained_langevin.yaml, custom_lie_poisson.yaml, *_formula.yaml.
    "custom": FormulaSystem,
    "custom_langevin": LangevinFormulaSystem,
    "custom_constrained_langevin": ConstrainedLangevinFormulaSystem,
    "custom_lie_poisson": LiePoissonFormulaSystem,
}
BUILT_IN = frozenset(SYSTEMS)


def register(name: str, cls: type[System]) -> None:
    """Run ``cls`` (a frozen dataclass subclassing ``System``, e.g. ``CanonicalSystem``, whose fields are its
    parameters) under the config name ``name``: ``system.name`` of its runs, the first part of their run
    directory. A name of one's own may be registered again (a notebook cell run twice); a built-in's may not.
    In this process only: a dask worker registers it again from the module that defines ``cls``
    (``runner.SimulatorBuilder``), so ``executor=dask`` needs a class defined in an importable module, not in a
    notebook.
    Its parameters' annotations are checked against the types a config value is checked against where a run
    builds it (``config.build_system``; ``sgi_run.register_system`` checks them at once): the config layer's
    concern, above this one.

    Example:

        >>> import dataclasses, jax.numpy as jnp
        >>> from sgi_run.systems import CanonicalSystem, register, SYSTEMS
        >>> @dataclasses.dataclass(frozen=True)
        ... class Pendulum(CanonicalSystem):
        ...     sigma: float = 0.1
        ...     def hamiltonian(self, q, p):
        ...         return 0.5 * jnp.sum(p**2) - jnp.sum(jnp.cos(q))
        ...     def noise_hamiltonians(self, q, p):
        ...         return jnp.array([self.sigma * jnp.sum(p)])
        ...     def initial_state(self, key):
        ...         return jnp.array([1.0, 0.0])
        >>> register("pendulum", Pendulum)
        >>> SYSTEMS["pendulum"] is Pendulum
        True
        >>> register("kubo", Pendulum)
        Traceback (most recent call last):
        sgi_run.core.errors.ConfigError: name='kubo' is not allowed: a name that is not a built-in system's ...
    """
    if not (isinstance(name, str) and name.isidentifier()):
        raise ConfigError("name", name, "a name of letters, digits and underscores (a run directory's first part)")
    if name in BUILT_IN and SYSTEMS[name] is not cls:
        raise ConfigError("name", name, f"a name that is not a built-in system's ({sorted(BUILT_IN)})")
    if not (isinstance(cls, type) and issubclass(cls, System) and dataclasses.is_dataclass(cls)):
        raise ConfigError("cls", cls, "a System subclass that is a frozen dataclass (its fields are its parameters)")
    SYSTEMS[name] = cls


def registered_name(cls: type[System]) -> str | None:
    """The config name ``cls`` is registered under (None: none)."""
    return next((name for name, registered in SYSTEMS.items() if registered is cls), None)

__all__ = ["SYSTEMS", "register", "registered_name", "ZeitlinEuler", "CanonicalSystem", "CirclePendulum", "ConstrainedLangevinFormulaSystem", "ConstrainedLangevinSystem", "FormulaSystem", "HeavyTop", "Kubo", "LangevinFormulaSystem",
           "LangevinDoubleWell", "LiePoissonFormulaSystem", "LiePoissonSystem", "Manakov", "PointVortices", "RigidBody", "SineEuler",
           "LangevinHarmonic", "LangevinSystem", "SphericalPendulum", "System", "VanDerPol", "VlasovLenardBernstein", "VlasovLorentz"]
