"""A row of maps in a panel's place, each with its own colour bar: what the ``field`` and ``solvability``
panel kinds share."""
from __future__ import annotations

import numpy as np

_PI_TICKS = {0.0: "0", 0.5: "π/2", 1.0: "π", 1.5: "3π/2", 2.0: "2π", -0.5: "-π/2"}


def pi_axis(axis, multiples) -> None:
    from matplotlib.ticker import FixedFormatter, FixedLocator

    axis.set_major_locator(FixedLocator([m * np.pi for m in multiples]))
    axis.set_major_formatter(FixedFormatter([_PI_TICKS[m] for m in multiples]))


def map_row(ax, count: int, wspace: float = 0.3) -> list:
    """``count`` axes side by side in a panel's place (``ax`` stays as a frame without axes, for the panel's
    title and legend): the maps of a field or solvability panel, ``wspace`` apart (room for the colour bars)."""
    cells = ax.get_subplotspec().subgridspec(1, count, wspace=wspace)
    return [ax.figure.add_subplot(cells[0, i]) for i in range(count)]


def colour_map(sub, values: np.ndarray, extent: tuple, cmap: str, limits: tuple, label: str | None = None,
               tick_format: str | None = None, bar: bool = True):
    """``values`` drawn as an image over ``extent`` (first row at the top) with its own colour bar on ``limits``,
    its ticks as ``tick_format`` says (e.g. "%.7f": values that differ in the 6th digit, written out, no offset);
    ``bar=False``: no colour bar (maps that share one scale show it once), its room kept so the maps stay alike."""
    from matplotlib.ticker import FormatStrFormatter
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    image = sub.imshow(values, cmap=cmap, vmin=limits[0], vmax=limits[1], origin="upper", aspect="equal",
                       interpolation="nearest", extent=extent)
    sub.tick_params(labelsize=7)
    cax = make_axes_locatable(sub).append_axes("right", size="4%", pad=0.05)
    if not bar:
        cax.set_visible(False)
        return image
    bar = sub.figure.colorbar(image, cax=cax)
    bar.ax.tick_params(labelsize=6.5)
    if tick_format:
        bar.ax.yaxis.set_major_formatter(FormatStrFormatter(tick_format))
    if label:
        bar.set_label(label, fontsize=7)
    return image
