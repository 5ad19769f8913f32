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

# One (theta, phi) map of ||(A, B)|| per fixed increment vector, from one run's integrator and system (paper 002
# Figure 14).
KEYS = ("quantity", "runs", "increments", "radius", "title", "label")
SOLVABILITY_CMAP = "viridis"   # sequential: ||(A, B)|| is positive, each map on its own range


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
    """Paper 002's Figure 14: one (theta, phi) map per fixed increment vector of ``increments`` of ||(A, B)|| =
    sqrt(|A|^2 + |B|^2), the rigid body's half-step momenta of eqs. (62) solved by the run's own integrator at
    every point of the sphere |Pi| = ``radius`` (statistics.solvability_map; polar angle theta down, azimuth phi
    across), each on its own colour scale, titled with its increments, its range and the solve's iterations."""
    run = data[panel["runs"][0]]
    ax.axis("off")
    increments = panel["increments"]
    for i, (sub, spec) in enumerate(zip(map_row(ax, len(increments), wspace=0.6), increments)):
        m = solvability_map(run, spec, panel.get("radius", 1.0))
        d_theta, d_phi = m.theta[1] - m.theta[0], m.phi[1] - m.phi[0]
        colour_map(sub, m.norm, (m.phi[0] - d_phi / 2, m.phi[-1] + d_phi / 2, m.theta[-1] + d_theta / 2,
                                 m.theta[0] - d_theta / 2), SOLVABILITY_CMAP, (float(m.norm.min()), float(m.norm.max())),
                   panel.get("label", "||(A, B)||") if i == len(increments) - 1 else None, "%.7f")
        converged = "all converged" if m.converged.all() else f"{int(np.sum(~m.converged))} unconverged"
        sub.set_title(f"{increment_text(spec, run.increment_bound)}\n||(A, B)|| in [{m.norm.min():.7f}, "
                      f"{m.norm.max():.7f}]\n≤ {int(m.iterations.max())} iterations, {converged}", fontsize=7.5)
        pi_axis(sub.xaxis, (0.0, 0.5, 1.0, 1.5, 2.0))
        pi_axis(sub.yaxis, (0.0, 0.5, 1.0))
        sub.set_xlabel("azimuth φ", fontsize=7.5)
        if i == 0:
            sub.set_ylabel("polar angle θ", fontsize=7.5)
    return 0


register(PanelKind("solvability", KEYS, _check_solvability, 1.5, _solvability_panel, maps=_solvability_maps,
                   title_pad=40, grid=False, needs_integrator_method=SOLVABILITY_NEEDS))
