"""Drawing a figure from its experiment's ``panels`` and the runs' mean curves (matplotlib, Agg)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter  # noqa: E402

from sgi_run.figures.checks import Series  # noqa: E402

BAND_SE = 2   # shaded band: ±2 Monte Carlo standard errors


def _curve(panel: dict, s: Series):
    if panel["quantity"] == "error":
        return s.mean - s.exact
    return s.mean


def draw(exp, series: dict[str, Series], table: list[dict], fidelity: str, path: Path) -> Path:
    """One panel per entry of ``exp.panels``, stacked, sharing the time axis."""
    colours = {run_id: f"C{i}" for i, run_id in enumerate(exp.runs)}
    heights = [2 if p["quantity"] == "mean" else 1 for p in exp.panels]
    fig, axes = plt.subplots(len(exp.panels), 1, sharex=True, figsize=(8, 3 + 2.2 * sum(heights) / 2),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    obs = exp.observable
    for ax, panel in zip(axes[:, 0], exp.panels):
        for run_id in panel["runs"]:
            s, colour = series[run_id], colours[run_id]
            y = _curve(panel, s)
            ax.plot(s.t, y, color=colour, lw=1.2, label=exp.runs[run_id].label)
            ax.fill_between(s.t, y - BAND_SE * s.sem, y + BAND_SE * s.sem, color=colour, alpha=0.25, lw=0)
        if panel.get("exact"):
            longest = max((series[r] for r in panel["runs"]), key=lambda s: len(s.t))
            ax.plot(longest.t, longest.exact, "k--", lw=1, label=f"exact E({obs})")
        if panel["quantity"] == "error":
            ax.axhline(0, color="k", lw=0.6)
        ax.set_yscale(panel.get("yscale", "linear"))
        if panel.get("yscale") == "log":     # plain numbers at 1-2-5 steps read better than powers of ten
            low, high = ax.get_ylim()
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5) if high / low < 1e3 else (1,)))
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel(panel.get("ylabel", f"E({obs})"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel("t")
    axes[0, 0].set_title(f"{exp.paper} {exp.figure}: {exp.title}", fontsize=10)
    paths = ", ".join(f"{r['run']} {r['paths']}" for r in table)
    footer = textwrap.fill(f"{fidelity} fidelity, T={table[0]['T']:g}; paths: {paths}; "
                           f"bands ±{BAND_SE} SE (Monte Carlo)", 150)
    fig.text(0.01, 0.005, footer, fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.012 * (footer.count("\n") + 2), 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
