"""What a figure makes of a Zeitlin state (Ephrati et al. 2024 Figure 2): its Berezin symbol on a latitude-longitude
grid (P10 (d)); the spectra and quflow coefficients are checked with the initial condition and the
observables (tests/systems/test_zeitlin.py)."""
import math

import numpy as np
import scipy.special

from sgi_run.figures.fields.zeitlin import render
from sgi_run.systems.zeitlin import hoppe_yau


def test_coherent_state_symbols_are_the_real_spherical_harmonics():
    """P10 (d), N = 9: the Berezin symbol of sqrt(N) T_lm correlates with sqrt(4 pi) Y^re_lm at >= 0.9999, ratio
    b_l = sqrt(N!(N-1)!/((N-l-1)!(N+l)!)) (every l >= 1, m: a sign slip in one (l, m) fails here)."""
    n = 9
    b = hoppe_yau(n)
    _, lat, lon = render(np.zeros((n, n)), 18, 36)
    theta, phi = np.meshgrid(np.pi / 2 - lat, lon, indexing="ij")
    for l in range(1, n):
        b_l = math.sqrt(math.factorial(n) * math.factorial(n - 1) / (math.factorial(n - l - 1) * math.factorial(n + l)))
        for m in range(-l, l + 1):
            y = scipy.special.sph_harm_y(l, abs(m), theta, phi)      # scipy >= 1.15: (degree, order, polar, azimuth)
            y_re = y.real if m == 0 else math.sqrt(2) * (-1) ** m * (y.real if m > 0 else -y.imag)
            y_re = math.sqrt(4 * np.pi) * y_re
            symbol = render(math.sqrt(n) * b.dense(l, m), 18, 36)[0]
            correlation = np.sum(symbol * y_re) / math.sqrt(np.sum(symbol**2) * np.sum(y_re**2))
            assert correlation >= 0.9999, (l, m, correlation)
            assert abs(np.sum(symbol * y_re) / np.sum(y_re**2) / b_l - 1) <= 1e-10, (l, m)
