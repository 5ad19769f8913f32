"""Drawing a figure from its experiment's ``panels`` and the runs' data (matplotlib, Agg).

Panel quantities: ``mean`` (E(observable)(t) with ±2 SE bands), ``error`` (E - exact) and
``density`` (the normalised histogram of one state coordinate at a snapshot time, with the exact
density the panel names). Optional panel keys: ``observable`` (default: the experiment's),
``reference`` (a horizontal line at a system reference value, e.g. ``ergodic_energy``), ``xlim``,
``ylim``, ``yscale``, ``ylabel``, ``exact`` (draw the exact mean), ``colours: by_position`` (the
n-th curve of every such panel has the same colour, e.g. one curve per friction value per method).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter  # noqa: E402

from sgi_run.figures.checks import RunData, histogram_density  # noqa: E402

BAND_SE = 2   # shaded band: ±2 Monte Carlo standard errors


def _time_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> None:
    obs = panel.get("observable", exp.observable)
    xlim = panel.get("xlim")
    for run_id in panel["runs"]:
        run, colour, label = data[run_id], colours[run_id], exp.runs[run_id].label
        s = run.curve(obs)
        keep = np.ones_like(s.t, bool) if not xlim else (s.t >= xlim[0]) & (s.t <= xlim[1])
        diverged = run.diverged_at(s)
        if np.isfinite(diverged):
            # Spec 003 layout: truncated where the run is declared diverged (a path went non-finite
            # or |E| > 1e6); past it the mean is over a shrinking, exploding ensemble.
            keep &= s.t <= diverged
            lost = int(run.nonfinite[-1]) if run.nonfinite is not None else 0
            label += f" (diverged at t={diverged:g}; {lost} of {run.paths} paths non-finite at T)"
        y = (s.mean - s.exact if panel["quantity"] == "error" else s.mean)[keep]
        ax.plot(s.t[keep], y, color=colour, lw=1.2, label=label)
        # A diverging run (SVIB at ch > 2) has SEs near the float limit: its band is drawn clipped.
        sem = np.nan_to_num(s.sem[keep])
        with np.errstate(over="ignore", invalid="ignore"):
            ax.fill_between(s.t[keep], y - BAND_SE * sem, y + BAND_SE * sem, color=colour, alpha=0.25, lw=0)
    if panel.get("exact"):
        longest = max((data[r].curve(obs) for r in panel["runs"]), key=lambda s: len(s.t))
        ax.plot(longest.t, longest.exact, "k--", lw=1, label=f"exact E({obs})")
    if panel.get("reference"):
        value = data[panel["runs"][0]].reference(panel["reference"])
        ax.axhline(value, color="k", ls="--", lw=1, label=f"{panel['reference']} = {value:.6g}")
    if panel["quantity"] == "error":
        ax.axhline(0, color="k", lw=0.6)
    if xlim:
        ax.set_xlim(*xlim)
    ax.set_yscale(panel.get("yscale", "linear"))
    if panel.get("yscale") == "log":     # plain numbers at 1-2-5 steps read better than powers of ten
        low, high = ax.get_ylim()
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5) if high / low < 1e3 else (1,)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(panel.get("ylabel", f"E({obs})"))
    ax.set_xlabel("t")


def _density_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> None:
    coordinate, at, bins, (lo, hi) = panel["coordinate"], panel["at"], panel["bins"], panel["range"]
    for run_id in panel["runs"]:
        x = data[run_id].samples(coordinate, at)
        if x is None:
            continue
        edges, density = histogram_density(x, bins, lo, hi, period=panel.get("period"))
        ax.stairs(density, edges, color=colours[run_id], lw=1.2, label=exp.runs[run_id].label)
    if panel.get("density"):
        grid = np.linspace(lo, hi, 400)
        exact = getattr(data[panel["runs"][0]].system, panel["density"])
        ax.plot(grid, exact(grid), "k--", lw=1.2, label=f"exact ({panel['density']})")
    ax.set_xlabel(coordinate + (f" mod {panel['period']:g}" if panel.get("period") else ""))
    when = "the final time" if at is None else f"t={at:g}"
    ax.set_ylabel(panel.get("ylabel", f"density of {coordinate} at {when}"))


def draw(exp, data: dict[str, RunData], table: list[dict], fidelity: str, path: Path) -> Path:
    """One panel per entry of ``exp.panels``, stacked."""
    colours = {run_id: f"C{i % 10}" if i < 10 else plt.cm.tab20(i % 20) for i, run_id in enumerate(exp.runs)}
    heights = [1 if p["quantity"] == "error" else 2 for p in exp.panels]
    fig, axes = plt.subplots(len(exp.panels), 1, figsize=(8, 3 + 2.2 * sum(heights) / 2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, panel in zip(axes[:, 0], exp.panels):
        by_position = {run_id: f"C{i % 10}" for i, run_id in enumerate(panel["runs"])}
        panel_colours = by_position if panel.get("colours") == "by_position" else colours
        (_density_panel if panel["quantity"] == "density" else _time_panel)(ax, exp, panel, data, panel_colours)
        if panel.get("ylim"):
            ax.set_ylim(*panel["ylim"])
        if panel.get("title"):
            ax.set_title(panel["title"], fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{exp.paper} {exp.figure}: {exp.title}", fontsize=10)
    paths = ", ".join(f"{r['run']} {r['paths']}" for r in table)
    footer = textwrap.fill(f"{fidelity} fidelity, T={table[0]['T']:g}; paths: {paths}; "
                           f"bands ±{BAND_SE} SE (Monte Carlo)", 150)
    fig.text(0.01, 0.005, footer, fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.012 * (footer.count("\n") + 2), 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
