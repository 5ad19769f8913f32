r"""Systems written as formulas in the config, no Python: ``system=custom system.H='...'``.

A formula is config text, so it is read as data, never run: Python's ``ast`` parses it and a walk over a
whitelist (``core.expressions``, the grammar tableau coefficients are read by too) turns it into a sympy
expression (``parse``): numbers, the state's symbols (``q``, ``p``; ``q1..qn``, ``p1..pn`` for ``dof`` n), the
system's named parameters, ``+ - * / **``, unary minus, parentheses, ``pi`` and the functions of ``FUNCTIONS``.
Anything else is one ``ConfigError`` line naming the key, the text and what is allowed, before any compute. The
expression becomes a JAX function by sympy's JAX printer (``jax_function``).

``FormulaSystem`` (config name ``custom``, ``canonical``) is a canonical system of formulas: ``H``, ``noise``
(the noise Hamiltonians h_i), optional ``F`` and ``noise_forcing``, ``dof``, ``q0``, ``p0``; every other key of
its config is a named parameter (``system.beta: 0.5``, ``parameters``), overridden and swept like a built-in's,
and a key no formula uses is refused. ``LangevinFormulaSystem`` (``custom_langevin``, ``langevin``) is a Langevin
system whose ``potential`` U(q) is a formula; ``ConstrainedLangevinFormulaSystem``
(``custom_constrained_langevin``) adds ``constraints``, k formulas g(q) = 0 in the positions, for the constrained
integrators (``circle_pendulum_formula.yaml``, ``spherical_pendulum_formula.yaml`` restate the built-ins).
``LiePoissonFormulaSystem`` (``custom_lie_poisson``, ``lie_poisson``) is a Lie-Poisson system whose ``h`` and
noise Hamiltonians are formulas in the coordinates of its ``algebra`` (``charts``: so3, se3, so(n), su(N) and
products ``so3 x so3`` of them, factor k's symbols suffixed ``_k``): ``rigid_body_formula.yaml`` and
``heavy_top_formula.yaml`` restate the built-ins with their keys.

**Initial laws** (``initial``). Each entry of an initial state is a number or a formula in independent standard
normals ``xi1, xi2, ..``, uniforms on [0, 1) ``u1, u2, ..`` and the parameters (``q0: "2 + 0.1*xi1"``), drawn
once per path from its own key.

**Invariants.** ``FormulaSystem.invariants`` declares H where sympy shows, with the parameters' values substituted,
that F and every f_i vanish and every h_i Poisson-commutes with H; a Lie-Poisson system declares its Casimirs.

A run's numbers then depend on sympy's printing too (``1/10``, ``q**2``), which the code digest of cached
runs (``provenance``) does not see: it is pinned by the environment, as JAX's own version is.
"""
from sgi_run.core.expressions import CONSTANTS, FUNCTIONS, MAX_DEPTH, MAX_LENGTH
from sgi_run.systems.formula.canonical import FormulaSystem
from sgi_run.systems.formula.charts import ALGEBRAS, MATRIX_MAX, MAX_FACTORS
from sgi_run.systems.formula.initial import CHECKED_DRAWS, MAX_RANDOM, RANDOM, RANDOM_SHOWN
from sgi_run.systems.formula.langevin import ConstrainedLangevinFormulaSystem, LangevinFormulaSystem
from sgi_run.systems.formula.lie_poisson import LiePoissonFormulaSystem
from sgi_run.systems.formula.parameters import MAX_VECTOR, parameter_symbols
from sgi_run.systems.formula.parse import Formula, free_names, jax_function, parse, state_symbols

__all__ = ["ALGEBRAS", "CHECKED_DRAWS", "CONSTANTS", "FUNCTIONS", "MATRIX_MAX", "MAX_DEPTH", "MAX_FACTORS",
           "MAX_LENGTH", "MAX_RANDOM", "MAX_VECTOR", "RANDOM", "RANDOM_SHOWN", "ConstrainedLangevinFormulaSystem",
           "Formula", "FormulaSystem", "LangevinFormulaSystem", "LiePoissonFormulaSystem", "free_names",
           "jax_function", "parameter_symbols", "parse", "state_symbols"]
