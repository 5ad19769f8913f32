"""Panel kinds joint_density and joint_density_surface: a phase-space density rho(x, v) (Kraus & Tyranowski's
Figure 4.5), drawn from the system's exact density and the run's samples."""
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.layout import style
from sgi_run.figures.panels import joint_density as kind
from sgi_run.figures.results import RunData

SYSTEM = SimpleNamespace(density_x=lambda x: 1 + 0.5 * np.cos(2 * np.pi * x),
                         density_v=lambda v: np.exp(-v**2 / 2) / np.sqrt(2 * np.pi))
PANEL = {"quantity": "joint_density", "runs": ["r"], "coordinates": ["x", "v"], "at": 0, "bins": [20, 30],
         "range": [[0, 1], [-4, 4]], "density": ["density_x", "density_v"]}


def _run(samples: int = 200_000) -> RunData:
    rng = np.random.default_rng(0)
    x, v = rng.uniform(0, 1, 4 * samples), rng.normal(size=4 * samples)
    keep = rng.uniform(0, 1.5, x.size) < SYSTEM.density_x(x)          # rejection: x ~ 1 + cos(2 pi x) / 2
    x, v = x[keep][:samples], v[keep][:samples]
    return RunData({}, "", SYSTEM, lambda at: {"x": x, "v": v} if at == 0 else None, samples, None)


def test_the_exact_density_of_a_product_law_is_its_marginals_product():
    x, v = np.linspace(0, 1, 5), np.linspace(-1, 1, 3)
    rho = kind.exact_density(SYSTEM, ["density_x", "density_v"], x, v)
    assert rho.shape == (3, 5)
    np.testing.assert_allclose(rho, SYSTEM.density_v(v)[:, None] * SYSTEM.density_x(x)[None, :], rtol=1e-15)


def test_the_sampled_density_is_normalised_and_agrees_with_the_exact_one():
    _fig, ax = plt.subplots()
    kind._joint_panel(ax, SimpleNamespace(), PANEL, {"r": _run()}, {"r": style(0)})
    (image,) = ax.get_images()
    density = np.asarray(image.get_array())
    cell = (1 / 20) * (8 / 30)
    assert density.sum() * cell == pytest.approx(1.0, abs=1e-3)       # |v| > 4 holds 6e-5 of the mass
    centres_x, centres_v = (np.arange(20) + 0.5) / 20, -4 + (np.arange(30) + 0.5) * 8 / 30
    exact = kind.exact_density(SYSTEM, PANEL["density"], centres_x, centres_v)
    core = exact > 0.1            # where a bin holds thousands of samples
    assert np.max(np.abs(density - exact)[core] / exact[core]) < 0.15
    assert ax.collections and ax.get_xlabel() == "$x$" and ax.get_ylabel() == "$v$"   # level sets, labels


def test_the_surface_is_drawn_on_3d_axes():
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    kind._surface_panel(ax, SimpleNamespace(), {**PANEL, "quantity": "joint_density_surface", "view": [30, -60]},
                        {"r": _run(1000)}, {"r": style(0)})
    assert ax.collections and ax.elev == 30 and ax.azim == -60


@pytest.mark.parametrize("key, value", [("coordinates", ["x"]), ("bins", [20, 1]), ("range", [[1, 0], [-4, 4]]),
                                        ("density", 3), ("at", -1), ("view", [30])])
def test_a_panel_it_cannot_draw_is_refused_in_one_line(key, value):
    with pytest.raises(ConfigError) as err:
        kind._check_joint({**PANEL, key: value}, lambda key: key, "panels[0]", {"r": None}, frozenset())
    assert str(err.value).startswith(f"panels[0].{key}=") and "\n" not in str(err.value)
