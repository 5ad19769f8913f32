"""Strong order ~1 of the mean-square methods on the damped Kubo oscillator against (4.1).

Kubo oscillator of Kraus & Tyranowski (2021) Sec. 4.1 with nu = 0.3 (the project's choice; it exercises the forcing terms), fewer paths.
"""
import numpy as np
import pytest

from sgi_run.engine.convergence import strong_errors
from sgi_run.systems import Kubo

DTS = [2.0**-k for k in range(3, 8)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["midpoint", "dirk", "heun", "stormer_verlet", "r2", "e1"])
def test_strong_order_one(name, make_integrator):
    system = Kubo(beta=0.5, nu=0.3, q0=2.0, p0=0.0)
    result = strong_errors(system, make_integrator(name), system.exact_state, T=1.0, dts=DTS, paths=1000)
    assert 0.85 <= result.order <= 1.15, (name, result.order, result.rms)
    assert np.all(np.diff(result.rms) < 0), "error must fall as dt falls"
