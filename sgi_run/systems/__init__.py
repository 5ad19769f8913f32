"""Systems: pure JAX physics. ``SYSTEMS`` maps the config name (``system.name``) to its class."""
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

__all__ = ["SYSTEMS", "CanonicalSystem", "CirclePendulum", "ConstrainedLangevinFormulaSystem", "ConstrainedLangevinSystem", "FormulaSystem", "HeavyTop", "Kubo", "LangevinFormulaSystem",
           "LangevinDoubleWell", "LiePoissonFormulaSystem", "LiePoissonSystem", "Manakov", "PointVortices", "RigidBody", "SineEuler",
           "LangevinHarmonic", "LangevinSystem", "SphericalPendulum", "System", "VanDerPol", "VlasovLenardBernstein", "VlasovLorentz"]
