"""Panel kind ``solvability``: one (theta, phi) map of ||(A, B)|| per fixed increment vector of ``increments``,
the rigid body's half-step momenta solved by the run's own integrator over the sphere |Pi| = ``radius``: paper
002 Fig. 14."""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.maps import colour_map, map_row, pi_axis
from sgi_run.figures.panels.validate import is_number
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import SOLVABILITY_NEEDS, increment_text, solvability_map, valid_increments

# One (theta, phi) map of ||(A, B)|| per fixed increment vector, from one run's integrator and system (Gay-Balmaz & Wu 2024
# Figure 14).
PANEL_KEYS = ("quantity", "runs", "increments", "radius", "title", "label")
SOLVABILITY_CMAP = "viridis"   # sequential: ||(A, B)|| is positive; the maps share one range, compared


def _check_solvability(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    """A solvability panel's keys: one run, its increment vectors, the sphere's radius."""
    require(k(f"{where}.runs"), panel["runs"], len(panel["runs"]) == 1, "a list of one run id (whose integrator and "
            "system the map is solved with)")
    require(k(f"{where}.increments"), panel.get("increments"), valid_increments(panel.get("increments")),
            'a list of increment vectors, entries numbers or "D" / "-D" (+-the truncation bound)')
    require(k(f"{where}.radius"), panel.get("radius"),
            is_number(panel.get("radius", 1.0)) and panel.get("radius", 1.0) > 0, "the sphere's radius |Pi| > 0 (default 1)")


def _solvability_maps(panel: dict, data: dict[str, RunData]) -> int:
    return len(panel["increments"])


def _solvability_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """Gay-Balmaz & Wu's (2024) Figure 14: one (theta, phi) map per fixed increment vector of ``increments`` of ||(A, B)|| =
    sqrt(|A|^2 + |B|^2), the rigid body's half-step momenta of eqs. (62) solved by the run's own integrator at
    every point of the sphere |Pi| = ``radius`` (statistics.solvability_map; polar angle theta down, azimuth phi
    across), titled with its increments, its range and the solve's iterations. The maps are compared: one colour
    scale, from the least to the largest value of them all, and one colour bar (each on its own scale, the
    ΔW = 0 map's 8e-6 of variation looked like the D maps' 6e-5)."""
    run = data[panel["runs"][0]]
    ax.axis("off")
    increments = panel["increments"]
    maps = [solvability_map(run, spec, panel.get("radius", 1.0)) for spec in increments]
    limits = (min(float(m.norm.min()) for m in maps), max(float(m.norm.max()) for m in maps))
    for i, (sub, spec, m) in enumerate(zip(map_row(ax, len(increments), wspace=0.6), increments, maps)):
        d_theta, d_phi = m.theta[1] - m.theta[0], m.phi[1] - m.phi[0]
        last = i == len(increments) - 1
        colour_map(sub, m.norm, (m.phi[0] - d_phi / 2, m.phi[-1] + d_phi / 2, m.theta[-1] + d_theta / 2,
                                 m.theta[0] - d_theta / 2), SOLVABILITY_CMAP, limits,
                   panel.get("label", "||(A, B)||") if last else None, "%.7f", bar=last)
        converged = "all converged" if m.converged.all() else f"{int(np.sum(~m.converged))} unconverged"
        sub.set_title(f"{increment_text(spec, run.increment_bound)}\n||(A, B)|| in [{m.norm.min():.7f}, "
                      f"{m.norm.max():.7f}]\n≤ {int(m.iterations.max())} iterations, {converged}", fontsize=7.5)
        pi_axis(sub.xaxis, (0.0, 0.5, 1.0, 1.5, 2.0))
        pi_axis(sub.yaxis, (0.0, 0.5, 1.0))
        sub.set_xlabel("azimuth φ", fontsize=7.5)
        if i == 0:
            sub.set_ylabel("polar angle θ", fontsize=7.5)
    return 0


def _solvability_table(panel: dict, data: dict[str, RunData]) -> tuple[str, list[str], list[list[str]]]:
    """The figure's table: per map, what it draws (the least and largest ||(A, B)|| and where the largest is), with
    |A|, |B| against the paper's ball B_2R and how the solve went."""
    run = data[panel["runs"][0]]
    rows = []
    for spec in panel["increments"]:
        m = solvability_map(run, spec, panel.get("radius", 1.0))
        i, j = np.unravel_index(int(np.argmax(m.norm)), m.norm.shape)
        rows.append([increment_text(spec, run.increment_bound).removeprefix("ΔW = "), f"{m.norm.min():.7f}", f"{m.norm.max():.7f}",
                     f"{m.norm.max() - m.norm.min():.2e}", f"({m.theta[i] / np.pi:.3g}π, {m.phi[j] / np.pi:.3g}π)",
                     f"{m.a.max():.7f}", f"{m.b.max():.7f}", f"{int(m.iterations.max())}",
                     f"{int(np.sum(~m.converged))} of {m.converged.size}"])
    # ‖ (the paper's norm), not ||: a | ends a markdown table's cell.
    text = (f"The maps drawn: ‖(A, B)‖ = sqrt(‖A‖² + ‖B‖²) of eqs. (62) on the (θ, φ) mesh of ‖Π‖ = "
            f"{panel.get('radius', 1.0):g}, solved by the run's integrator at Δt = {run.dt:g} for each fixed increment ΔW.")
    header = ["ΔW", "min ‖(A, B)‖", "max ‖(A, B)‖", "max - min", "max at (θ, φ)", "max ‖A‖", "max ‖B‖",
              "iterations (max)", "unconverged points"]
    return text, header, rows


register(PanelKind("solvability", PANEL_KEYS, _check_solvability, 1.5, _solvability_panel, maps=_solvability_maps,
                   title_pad=40, grid=False, needs_integrator_method=SOLVABILITY_NEEDS, table=_solvability_table))
