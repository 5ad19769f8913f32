"""Zeitlin's vorticity as a figure sees it (Ephrati et al. 2024 Figure 2): quflow's coefficients of a state, its
enstrophy and energy spectra, and its Berezin symbol on a latitude-longitude grid; the ``render_field`` and
``enstrophy_spectrum`` of ``ZeitlinEuler``'s states."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from sgi_run.figures.fields.registry import field_method
from sgi_run.systems.zeitlin import ZeitlinEuler, degrees, hoppe_yau


def coefficients_quflow(xq) -> np.ndarray:
    """:math:`\\omega_{lm} = \\mathrm{Re\\,tr}(T_{lm}^*X^q)/\\sqrt N` (flat, N^2) of a quflow-normalised matrix."""
    xq = np.asarray(xq)
    n = xq.shape[-1]
    with jax.ensure_compile_time_eval():      # numbers, also when called while a function is traced
        return np.asarray(hoppe_yau(n).forward_numbers(jnp.asarray(xq))) / math.sqrt(n)


def spectra(omega) -> tuple[np.ndarray, np.ndarray]:
    """Enstrophy spectrum :math:`S_l = \\sum_m\\omega_{lm}^2` and energy spectrum :math:`E_l = S_l/(l(l+1))`
    (:math:`E_0 = 0`), l = 0..N-1, of flat quflow coefficients (Ephrati et al. 2024 Figure 2)."""
    omega = np.asarray(omega)
    n = math.isqrt(omega.shape[-1])
    s = omega**2 @ (degrees(n)[:, None] == np.arange(n))
    ll = np.arange(n) * (np.arange(n) + 1.0)
    return s, np.divide(s, ll, out=np.zeros_like(s), where=ll > 0)


def render(xq, n_lat: int = 256, n_lon: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Berezin (coherent-state) symbol :math:`\\omega_B(\\theta,\\varphi) = \\langle n|(-iX^q)|n\\rangle` of
    a quflow-normalised :math:`X^q` on a latitude-longitude grid (quflow's default rendering, the project's choice for Ephrati et al. (2024) Figure 2):
    :math:`c_r = \\sqrt{\\binom{N-1}{r}}\\cos^r(\\theta/2)\\sin^{N-1-r}(\\theta/2)e^{-i(r-s)\\varphi}` (the last row is
    the north pole), :math:`G_m(\\theta) = \\sum_{r-c=m}a_ra_cH_{rc}`,
    :math:`\\omega_B = G_0 + 2\\mathrm{Re}\\sum_{m>0}G_me^{im\\varphi}` by an FFT in longitude; binomials in log
    space. Returns ``(values (n_lat, n_lon), lat, lon)``: cell-centred colatitudes
    :math:`\\theta_i = \\pi(i + \\tfrac12)/n_{lat}`, latitude :math:`\\pi/2 - \\theta` (north first), longitudes
    :math:`2\\pi j/n_{lon}`."""
    h = -1j * np.asarray(xq)
    n = h.shape[-1]
    theta = np.pi * (np.arange(n_lat) + 0.5) / n_lat
    r = np.arange(n)
    log_binom = scipy.special.gammaln(n) - scipy.special.gammaln(r + 1) - scipy.special.gammaln(n - r)
    log_a = (0.5 * log_binom + scipy.special.xlogy(r, np.cos(theta / 2)[:, None])
             + scipy.special.xlogy(n - 1 - r, np.sin(theta / 2)[:, None]))
    a = np.exp(log_a)                                                            # (n_lat, N)
    g = np.zeros((n_lat, n_lon), complex)
    for m in range(n):
        gm = (a[:, m:] * a[:, :n - m]) @ np.diagonal(h, -m)                      # sum_k a_{k+m} a_k H_{k+m,k}
        g[:, m % n_lon] += gm if m == 0 else 2 * gm
    values = np.real(np.fft.ifft(g, axis=1)) * n_lon
    return values, np.pi / 2 - theta, 2 * np.pi * np.arange(n_lon) / n_lon


def quflow_matrix(system: ZeitlinEuler, x):
    """:math:`X^q = \\hbar X` (for ``render``)."""
    return system.hbar * x


def coefficients(system: ZeitlinEuler, x) -> np.ndarray:
    """Flat quflow coefficients :math:`\\omega_{lm} = \\mathrm{Re\\,tr}(T_{lm}^*X^q)/\\sqrt N` of the state X."""
    return coefficients_quflow(quflow_matrix(system, np.asarray(x)))


@field_method(ZeitlinEuler, "render_field")
def render_field(system: ZeitlinEuler, x, n_lat: int = 256,
                 n_lon: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vorticity of the state X on a latitude-longitude grid: the Berezin symbol of X^q = hbar X
    (``render``): (values (n_lat, n_lon), latitudes north first, longitudes in [0, 2 pi))."""
    return render(quflow_matrix(system, np.asarray(x)), n_lat, n_lon)


@field_method(ZeitlinEuler, "enstrophy_spectrum")
def enstrophy_spectrum(system: ZeitlinEuler, x) -> tuple[np.ndarray, np.ndarray]:
    """(S_l, E_l), l = 0..N-1, of the state X (``spectra`` of its quflow coefficients)."""
    return spectra(coefficients(system, x))
