"""Panel kind ``potential``: the heavy top's effective potential V(theta; p_psi(t), p_phi(t)) of kept path
``path`` at each time ``at`` (solid) and the level of E'(t) (dashed), theta over ``xlim`` (Gay-Balmaz & Wu 2024 Figs 3, 10,
13)."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.layout import LINESTYLES, style
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.validate import check_path_index, is_number, is_times
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import potential_from_run

PANEL_KEYS = ("quantity", "runs", "at", "path", "xlim", "ylim", "title", "ylabel")


def _check_potential(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    at = panel.get("at")
    require(k(f"{where}.at"), at, is_times(at), "a list of output times >= 0 (the momenta V is built from)")
    xlim = panel.get("xlim", [0.2, 1.0])
    require(k(f"{where}.xlim"), xlim, isinstance(xlim, list) and len(xlim) == 2 and all(is_number(v) for v in xlim)
            and 0 < xlim[0] < xlim[1] < math.pi, "[low, high] inside (0, pi)")
    check_path_index(panel, k, where)


def _potential_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """The symmetric heavy top's effective potential V(theta; p_psi(t), p_phi(t)) (solid) and the level of the
    reduced energy E'(t) (dashed, same colour) of each run's kept path ``path`` at each time of ``at``, over
    theta in ``xlim`` (Gay-Balmaz & Wu 2024 Figs 3, 10, 13: the curves coincide while p_psi and p_phi are conserved). Without a
    ``ylim`` the y-range is the well's, from its bottom to above the highest E', so that the well and the turning
    points, where E' meets V (marked), can be seen."""
    theta = np.linspace(*panel.get("xlim", [0.2, 1.0]), 801)
    path, drawn, bottoms, levels = panel.get("path", 0), 0, [], []
    for run_id in panel["runs"]:
        for t in panel["at"]:
            found = potential_from_run(data[run_id], t, path)
            look = style(drawn)
            if found is None:
                continue
            v, e_prime, at = found
            label = exp.runs[run_id].label + (f", t = {at:g}" if len(panel["at"]) > 1 else "")
            values = v(theta)
            ax.plot(theta, values, color=look.colour, ls=LINESTYLES[drawn % len(LINESTYLES)], lw=1.3,
                    label=rf"$V(\theta)$, {label}")
            ax.axhline(e_prime, color=look.colour, lw=1.0, ls=(0, (4, 2)), label=f"$E'$ = {e_prime:.6g}, {label}")
            turning = np.flatnonzero(np.diff(np.sign(values - e_prime)) != 0)
            ax.plot(theta[turning], np.full(len(turning), e_prime), ls="none", marker=look.marker, mfc="white",
                    color=look.colour, ms=6, label=f"turning points ($E'$ = $V$), {label}")
            bottoms.append(float(np.min(values)))
            levels.append(e_prime)
            drawn += 1
    ax.set_xlabel(r"$\theta$")
    ax.set_ylabel(panel.get("ylabel", r"$V(\theta;\, p_\psi, p_\phi)$"))
    if panel.get("ylim"):
        ax.set_ylim(panel["ylim"])
    elif bottoms:
        depth = max(max(levels) - min(bottoms), 1e-12)
        ax.set_ylim(min(bottoms) - 0.25 * depth, max(levels) + 1.5 * depth)
    return 0


register(PanelKind("potential", PANEL_KEYS, _check_potential, 2.4, _potential_panel))
