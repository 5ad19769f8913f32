"""A system's work-precision diagram: each method's strong error, weak error and largest invariant drift against
its wall time per path (one point per step size, finer to the right), timed in one series on one device. A cell
whose solves did not converge or whose paths went non-finite is drawn hollow and named so in the legend."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter

from sgi_run.bench.verdicts import run_failed

ERROR_BAR_SE = 2
MARKERS = "osD^v<>pXh*P"


def _panels(system) -> list[tuple[str, str]]:
    panels = []
    if any(not math.isnan(r["strong_error"]) for r in system.rows):
        panels.append(("strong", "RMS error of the state at T (±2 SE)"))
    if any(not math.isnan(r["weak_error"]) for r in system.rows):
        panels.append(("weak", f"|error of E {system.entry.observable}(T)| (±2 SE)"))
    if system.facts is not None and system.facts.invariants:
        panels.append(("drift", "largest invariant drift (every path, step)"))
    return panels


def draw(system, path: Path) -> None:
    """The diagram of ``system`` (a ``run.SystemResult``) as ``path`` (PNG) and beside it an SVG."""
    panels = _panels(system)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    methods = list(dict.fromkeys(r["integrator"] for r in system.rows))
    flagged = {c["integrator"] for c in system.cells if c["fits"] and run_failed(c)}
    for ax, (kind, title) in zip(axes[0], panels):
        for n, method in enumerate(methods):
            rows = [r for r in system.rows if r["integrator"] == method]
            cost = [r["seconds_per_path"] for r in rows]
            if kind == "drift":
                names = [k for k in rows[0] if k.startswith("drift_")]
                y = [max((r[k] for k in names if not math.isnan(r[k])), default=math.nan) for r in rows]
                err = None
            else:
                y = [abs(r[f"{kind}_error"]) for r in rows]
                err = [ERROR_BAR_SE * r[f"{kind}_se"] for r in rows]
            if all(math.isnan(v) for v in y):
                continue
            hollow = method in flagged
            label = method + (" (unconverged or non-finite)" if hollow else "")
            ax.errorbar(cost, y, yerr=None if err is None else [[min(e, v * 0.999) for e, v in zip(err, y)], err],
                        marker=MARKERS[n % len(MARKERS)], mfc="none" if hollow else None, label=label, capsize=2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())     # a narrow cost range would label every minor tick
        ax.set_xlabel(f"wall time per path [s] ({system.rows[0]['device']})")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)
    fig.suptitle(system.entry.label, fontsize=11)
    fig.tight_layout(rect=(0, 0.08 + 0.03 * (len(labels) // 7), 1, 0.95))
    path = Path(path)
    for target in (path, path.with_suffix(".svg")):
        partial = target.with_name(f".{target.name}.partial")
        fig.savefig(partial, dpi=110, format=target.suffix[1:])
        partial.replace(target)
    plt.close(fig)
