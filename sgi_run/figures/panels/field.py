"""Panel kind ``field``: one row of latitude-longitude maps of one path's state at the snapshot times ``at``,
default every one the run stored, rendered by the system's ``render_field``, each on its own colour scale
symmetric about 0."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures import fields
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.maps import colour_map, map_row, pi_axis
from sgi_run.figures.panels.validate import check_path_index, is_integer, is_times
from sgi_run.figures.results import RunData

# One row of maps, path `path`'s state at each snapshot time `at` (default: every snapshot the run stored) drawn
# on a latitude-longitude grid by the system's `render_field(state, n_lat, n_lon)`.
PANEL_KEYS = ("quantity", "runs", "at", "path", "grid", "title", "label")
FIELD_CMAP = "RdBu_r"   # diverging, white at 0: every map's colour scale is symmetric about 0
FIELD_GRID = (256, 512)   # (n_lat, n_lon) of a field panel without `grid` (the project's choice for Ephrati et al. (2024) Figure 2)


def _check_field(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    """A field panel's keys: one run, snapshot times, a path index, the grid."""
    require(k(f"{where}.runs"), panel["runs"], len(panel["runs"]) == 1, "a list of one run id (a field panel draws "
            "one run's snapshots)")
    at = panel.get("at")
    require(k(f"{where}.at"), at, at is None or (is_times(at) and len(set(at)) == len(at)),
            "a list of distinct snapshot times >= 0 (plan.snapshots), or absent: every snapshot")
    check_path_index(panel, k, where)
    grid = panel.get("grid", [2, 2])
    require(k(f"{where}.grid"), grid, isinstance(grid, list) and len(grid) == 2 and all(is_integer(n) and n >= 2 for n in grid),
            "[n_lat, n_lon]: two integers >= 2 (default [256, 512])")


def field_times(panel: dict, run: RunData) -> list[float]:
    """The snapshot times a field panel draws: its ``at``, or every snapshot the run stored."""
    return [float(t) for t in panel["at"]] if panel.get("at") is not None else sorted(run.snapshot_times)


def _field_maps(panel: dict, data: dict[str, RunData]) -> int:
    return len(field_times(panel, data[panel["runs"][0]]))


def _field_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """One row of maps in the panel's place (``ax`` becomes a frame without axes): path ``path``'s state at
    each snapshot time, rendered on a latitude-longitude grid (longitude φ in [0, 2π) across, latitude
    down from π/2 at the top) by the system's ``render_field(state, n_lat, n_lon) -> (values (n_lat, n_lon),
    lat, lon)``, each map on its own colour scale, symmetric about 0, with its own colour bar (Ephrati et al. 2024
    Figure 2: vorticity snapshots)."""
    run_id, path = panel["runs"][0], panel.get("path", 0)
    run = data[run_id]
    render_field = fields.method_of(run.system, "render_field")
    times = field_times(panel, run)
    n_lat, n_lon = panel.get("grid", FIELD_GRID)
    ax.axis("off")
    if not times:
        ax.text(0.5, 0.5, f"nothing to draw: {exp.runs[run_id].label} stored no snapshots (plan.snapshots)",
                transform=ax.transAxes, ha="center", va="center", fontsize=8.5, color="0.3")
        return 0
    for i, (sub, t) in enumerate(zip(map_row(ax, len(times)), times)):
        step = f" (step {round(t / run.dt)})" if run.dt else ""
        sub.set_title(f"t = {t:.4g}{step}", fontsize=8.5)
        state = run.state(t, path)
        if state is None:
            sub.text(0.5, 0.5, f"no snapshot at t = {t:g}\n(plan.snapshots)", transform=sub.transAxes,
                     ha="center", va="center", fontsize=8, color="0.3")
            sub.set_axis_off()
            continue
        values, lat, lon = (np.asarray(a, float) for a in render_field(state, n_lat, n_lon))
        with np.errstate(invalid="ignore"):
            scale = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else math.nan
        if not math.isfinite(scale) or scale == 0:
            sub.text(0.5, 0.5, "not finite" if not math.isfinite(scale) else "zero everywhere",
                     transform=sub.transAxes, ha="center", va="center", fontsize=8, color="0.3")
            scale = 1.0
        d_lon, d_lat = 2 * np.pi / len(lon), np.pi / len(lat)
        colour_map(sub, values, (lon[0] - d_lon / 2, lon[-1] + d_lon / 2, lat[-1] - d_lat / 2, lat[0] + d_lat / 2),
                   FIELD_CMAP, (-scale, scale),
                   panel.get("label", "rendered field") + " (each map its own scale)" if i == len(times) - 1 else None)
        pi_axis(sub.xaxis, (0.0, 0.5, 1.0, 1.5, 2.0))
        pi_axis(sub.yaxis, (-0.5, 0.0, 0.5))
        sub.set_xlabel("longitude φ", fontsize=7.5)
        if i == 0:
            sub.set_ylabel("latitude", fontsize=7.5)
    return 0


register(PanelKind("field", PANEL_KEYS, _check_field, 1.5, _field_panel, maps=_field_maps, title_pad=18,
                   grid=False, needs_system_method="render_field(state, n_lat, n_lon)"))
