"""Panel kinds ``joint_density`` and ``joint_density_surface``: the density of two state coordinates at a snapshot
time, as the papers draw a phase-space density rho(x, v) (Kraus & Tyranowski's Figure 4.5).

``joint_density``: the normalised 2-D histogram of the samples as an image, with the level sets of the exact density
over it; ``joint_density_surface``: the exact density as a surface over the plane (3-D), the paper's view. Keys:
``coordinates: [x, v]``, ``at`` (a snapshot time), ``bins: [nx, nv]``, ``range: [[x_lo, x_hi], [v_lo, v_hi]]``,
``density``: the system's method of the joint density rho(x, v), or a list of two methods whose product it is (a
product law, e.g. ``[initial_density_x, initial_density_v]``); ``period`` wraps the first coordinate; ``view``
(surface): [elevation, azimuth].
"""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.panels.validate import is_integer, is_number
from sgi_run.figures.results import RunData

PANEL_KEYS = ("quantity", "runs", "coordinates", "at", "bins", "range", "density", "period", "title", "view")


def _check_joint(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    coordinates, bins, extent = panel.get("coordinates"), panel.get("bins"), panel.get("range")
    require(k(f"{where}.coordinates"), coordinates, isinstance(coordinates, list) and len(coordinates) == 2
            and all(isinstance(c, str) for c in coordinates), "two state coordinates, e.g. [x, v]")
    require(k(f"{where}.at"), panel.get("at"), is_number(panel.get("at")) and panel["at"] >= 0,
            "a snapshot time >= 0 (the runs need plan.snapshots with it)")
    require(k(f"{where}.bins"), bins, isinstance(bins, list) and len(bins) == 2 and all(is_integer(b) and b >= 2 for b in bins),
            "[bins along the first coordinate, along the second], integers >= 2")
    require(k(f"{where}.range"), extent, isinstance(extent, list) and len(extent) == 2 and all(
        isinstance(r, list) and len(r) == 2 and all(is_number(v) for v in r) and r[0] < r[1] for r in extent),
        "[[low, high] of the first coordinate, [low, high] of the second]")
    density = panel.get("density")
    require(k(f"{where}.density"), density, isinstance(density, str) or (
        isinstance(density, list) and len(density) == 2 and all(isinstance(d, str) for d in density)),
        "the system's joint density method, or [its two marginals' methods] of a product law")
    require(k(f"{where}.view"), panel.get("view"), panel.get("view") is None or (
        isinstance(panel["view"], list) and len(panel["view"]) == 2 and all(is_number(v) for v in panel["view"])),
        "[elevation, azimuth] in degrees")


def exact_density(system, density, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """rho(x, v) on the grid of ``x`` (columns) and ``v`` (rows): the system's joint density, or the product of its
    two marginals."""
    if isinstance(density, str):
        return np.asarray(getattr(system, density)(x[None, :], v[:, None]), float)
    first, second = (getattr(system, name) for name in density)
    return np.asarray(second(v), float)[:, None] * np.asarray(first(x), float)[None, :]


def _grid(panel: dict, points: int = 121):
    (x_lo, x_hi), (v_lo, v_hi) = panel["range"]
    return np.linspace(x_lo, x_hi, points), np.linspace(v_lo, v_hi, points)


def _labels(ax, panel: dict) -> None:
    x, v = panel["coordinates"]
    ax.set_xlabel(symbol(x) + (f" mod {panel['period']:g}" if panel.get("period") else ""))
    ax.set_ylabel(symbol(v))


def _joint_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """The samples' normalised 2-D histogram (an image; a bin's value is its count over all finite samples and its
    area, so mass outside the range shows as a deficit) and the exact density's level sets over it (black)."""
    run = data[panel["runs"][0]]
    x_name, v_name = panel["coordinates"]
    x, v = run.samples(x_name, panel["at"]), run.samples(v_name, panel["at"])
    (x_lo, x_hi), (v_lo, v_hi) = panel["range"]
    levels = None
    if x is not None and v is not None:
        finite = np.isfinite(x) & np.isfinite(v)
        x, v = (np.mod(x[finite], panel["period"]) if panel.get("period") else x[finite]), v[finite]
        counts, x_edges, v_edges = np.histogram2d(x, v, bins=panel["bins"], range=panel["range"])
        density = counts.T / (finite.sum() * np.outer(np.diff(v_edges), np.diff(x_edges)))
        image = ax.imshow(density, origin="lower", extent=(x_lo, x_hi, v_lo, v_hi), aspect="auto", cmap="viridis")
        ax.figure.colorbar(image, ax=ax, pad=0.02, fraction=0.05,
                           label=f"sampled density ({finite.sum():,} samples)\nblack: level sets of the exact one")
        levels = np.linspace(0, density.max(), 8)[1:]
    gx, gv = _grid(panel)
    exact = exact_density(run.system, panel["density"], gx, gv)
    # In the colour bar's words, not a legend: a legend beside the axes would stand on the colour bar.
    ax.contour(gx, gv, exact, levels=levels if levels is not None else 7, colors="k", linewidths=0.7)
    _labels(ax, panel)
    return 0


def _surface_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """The exact joint density as a surface over the (x, v) plane (``ax`` is 3-D)."""
    gx, gv = _grid(panel, 81)
    exact = exact_density(data[panel["runs"][0]].system, panel["density"], gx, gv)
    xx, vv = np.meshgrid(gx, gv)
    ax.plot_surface(xx, vv, exact, cmap="viridis", lw=0, rcount=80, ccount=80, antialiased=False, rasterized=True)
    ax.plot([], [], "s", color=styles[panel["runs"][0]].colour, label=r"exact density $\rho(x, v)$ (surface)")
    if panel.get("view"):
        ax.view_init(*panel["view"])
    _labels(ax, panel)
    ax.set_zlabel(r"$\rho$", labelpad=-2)
    ax.tick_params(labelsize=7, pad=0)
    return 0


register(PanelKind("joint_density", PANEL_KEYS, _check_joint, 3.0, _joint_panel, grid=False))
register(PanelKind("joint_density_surface", PANEL_KEYS, _check_joint, 3.6, _surface_panel, projection="3d", grid=False))
