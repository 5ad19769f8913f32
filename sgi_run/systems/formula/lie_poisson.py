"""``LiePoissonFormulaSystem`` (``custom_lie_poisson``): a Lie-Poisson system (``systems.lie_poisson``) whose
Hamiltonian and noise Hamiltonians are formulas in the coordinates of its algebra (``systems.formula.charts``)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import ClassVar

import jax.numpy as jnp

from sgi_run.core.errors import require
from sgi_run.core.space import StateSpace
from sgi_run.systems.formula.base import _Formulas
from sgi_run.systems.formula.charts import Chart, ProductChart
from sgi_run.systems.formula.initial import InitialLaw, as_optional_entries
from sgi_run.systems.formula.parameters import Compiled, Compiler, Converted, as_parameters
from sgi_run.systems.formula.parse import Formula
from sgi_run.systems.lie_poisson import LiePoissonSystem


@dataclasses.dataclass(frozen=True)
class LiePoissonFormulaSystem(_Formulas, LiePoissonSystem):
    r"""A Lie-Poisson system (``lie_poisson.py``) whose Hamiltonian :math:`h` and noise Hamiltonians
    :math:`h_i` are formulas of the config, on the algebra its text names (config key ``algebra``):

    - ``so3``: :math:`\pi\in\mathbb R^3` (state leaf ``pi``, as ``rigid_body``), symbols ``pi1 pi2 pi3``,
      initial ``pi0``; Casimir C2 = :math:`|\pi|^2`.
    - ``se3``: :math:`(\pi, \gamma)` (leaves ``pi``, ``gamma``, as ``heavy_top``), symbols ``pi1..pi3``,
      ``gamma1..gamma3``, initial ``pi0``, ``gamma0``; Casimirs C1 = :math:`\pi\cdot\gamma`, C2 = :math:`|\gamma|^2`.
    - ``so(n)``: the real antisymmetric n x n matrix M (leaf ``M``), symbols ``m12, m13, .., m23, ..``
      (:math:`M_{ij}` above the diagonal, :math:`M_{ji} = -M_{ij}`), initial ``m0``: their values in that order.
    - ``su(N)``: the skew-Hermitian traceless M (complex leaf ``M``), symbols ``reij``, ``imij`` for i < j
      (:math:`M_{ij} = re_{ij} + i\,im_{ij}`, :math:`M_{ji} = -re_{ij} + i\,im_{ij}`) and ``imkk`` on the
      diagonal (:math:`M_{kk} = i\,im_{kk}`, summing to 0), row by row (``re12 im12 re13 im13 .. im22 ..``
      with ``im11`` first); initial ``m0``: their values in that order.

    - a product ``a x b x ..`` of those (``lie.Product``; ``so3 x so3``: two decoupled or coupled bodies): factor k's
      symbols are its own with the suffix ``_k`` (``pi1_1 .. pi3_2``), as its Casimirs are named (``C2_1``), its
      leaves too (``pi_1``, ``gamma_2``, ``M_3``); ``pi0``, ``gamma0``, ``m0`` list the entries of every factor with
      that key, factor by factor (``ProductChart``). ``isomp`` fits a product of matrix algebras.

    From n = 10 the indices are apart, ``m1_10``. Every symbol is real, so a formula of them is a real
    function of the matrix: its gradient for the pairing comes from ``jax.grad`` and the projection on the
    algebra (the base's ``gradient``), so a formula in the entries above the diagonal means what it says.
    The Casimirs (:math:`\mathrm{tr}(M^{2k})`, :math:`\mathrm{tr}((iM)^k)`) are the algebra's, real, and
    ``isomp`` keeps them on the matrix algebras (so3 by hat included) as on the built-ins.

    ``algebra`` is the config key, ``algebra_name`` its field: the base's ``algebra`` is the Lie algebra
    itself, which the integrators use. The state carries no attitude (the built-ins' ``R0``): a formula
    system integrates the momentum alone, as Luesink et al. (2023) and Ephrati et al. (2024) do (``lgvi_cayley``
    fits so3 and se3 without it). Observables: ``H``, the Casimirs, and each coordinate by its symbol."""

    config_name: ClassVar[str] = "custom_lie_poisson"
    KEY_TO_FIELD: ClassVar[Mapping[str, str]] = {"algebra": "algebra_name"}

    algebra_name: str = "so3"
    h: Formula = "pi1**2/4 + pi2**2/2 + 3*pi3**2/4"
    noise: tuple[Formula, ...] = ("pi1**2/20", "pi2**2/20", "pi3**2/20")
    pi0: tuple[float | Formula, ...] | None = Converted((0.8912073600614354, 0.0, 0.4535961214255773),
                                                        as_optional_entries)
    gamma0: tuple[float | Formula, ...] | None = Converted(None, as_optional_entries)
    m0: tuple[float | Formula, ...] | None = Converted(None, as_optional_entries)
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = Converted((), as_parameters)

    def __post_init__(self):
        self._compiled     # noqa: B018 (compiled, or refused, as it is built)

    @functools.cached_property
    def _chart(self) -> Chart | ProductChart:
        """The algebra's chart (refused where ``algebra`` names none)."""
        return Chart.of(self.algebra_name)

    def _compile(self) -> Compiled:
        chart = self._chart
        compile = Compiler(self, chart.symbols)
        noise = (self.noise,) if isinstance(self.noise, str) else self.noise
        require("noise", self.noise, isinstance(noise, tuple) and len(noise) > 0,
                "a list of one or more noise Hamiltonians h_i")
        hamiltonian = compile("h", self.h)
        noise_hamiltonians = [compile("noise", h) for h in noise]
        law = InitialLaw.compile(compile, {key: getattr(self, key) for key in ("pi0", "gamma0", "m0")})
        return compile.finish({"h": hamiltonian, "noise": noise_hamiltonians}, law)

    def check(self):
        chart = self._chart
        for key, size in zip(chart.initial_keys, chart.initial_sizes()):
            value, symbols = getattr(self, key), chart.key_symbols(key) if key == "m0" or chart.kind == "product" else None
            coordinates = (f"{symbols[0]}, {symbols[1]}, .., {symbols[-1]}" if len(symbols) > 3
                           else ", ".join(symbols)) if symbols else None
            require(key, value, isinstance(value, tuple) and len(value) == size,
                    f"{size} numbers: the initial {'pi' if key == 'pi0' else 'gamma' if key == 'gamma0' else 'M'} "
                    f"on {chart.algebra.name}" + (f" ({coordinates}, in that order)" if coordinates else ""))
        for key in ("pi0", "gamma0", "m0"):
            if key not in chart.initial_keys:
                require(key, getattr(self, key), getattr(self, key) is None,
                        f"null with algebra {chart.algebra.name} (its initial state is {', '.join(chart.initial_keys)})")
        for z in self.checked_starts():     # a random law: its draws at fixed keys
            for diagonal in chart.su_diagonals(self.dual(z)):
                n = len(diagonal)
                require("m0", self.m0, abs(sum(diagonal)) <= 1e-12 * max(1.0, *map(abs, diagonal)),
                        f"an su({n}) matrix: its imaginary diagonal im11 + .. + im{n}{n} sums to 0 "
                        f"(traceless), not {sum(diagonal):.3g}")

    @property
    def noises(self) -> int:
        return len(self._functions["noise"])

    @property
    def algebra(self):
        return self._chart.algebra

    @property
    def space(self) -> StateSpace:
        return self._chart.space

    # --- physics -----------------------------------------------------------------------------
    def _call(self, function, mu):
        # A constant formula is a Python number; every symbol is real, so the value is too (float64).
        return jnp.asarray(function(*self._chart.values(mu), *self._values), dtype=jnp.float64)

    def hamiltonian(self, mu):
        return self._call(self._functions["h"], mu)

    def noise_hamiltonians(self, mu):
        return jnp.stack([self._call(h, mu) for h in self._functions["noise"]])

    def dual(self, z):
        return self._chart.dual(z)

    def state(self, mu, attitude=None):
        """The state of a dual element; ``attitude`` (``lgvi_cayley`` passes the state's) is None here."""
        return self._chart.state(mu)

    def attitude(self, z):
        return None

    def initial_state(self, key):
        return self.state(self._chart.initial(self._initial_values(key)))

    def observables(self) -> dict[str, Callable]:
        """The base's (``H``, the Casimirs, the spectrum on a matrix algebra, the components of ``pi`` and
        ``gamma``), and each matrix coordinate by its symbol (``m12``, ``re12``, ``im11``)."""
        named = super().observables()
        if self._chart.kind == "product":     # by symbol (pi1_2), not by the leaves' components (pi_21: which is which?)
            leaves = [leaf.name for leaf in self.space.leaves]
            named = {k: f for k, f in named.items() if not any(k.startswith(n) and k[len(n):].isdigit() for n in leaves)}
        if self._chart.kind in ("so", "su", "product"):
            named |= {s: (lambda z, k=k: self._chart.values(self.dual(z))[k]) for k, s in enumerate(self._chart.symbols)}
        return named
