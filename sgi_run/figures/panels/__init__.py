"""Panel kinds: what an entry of an experiment's ``panels`` may draw (its ``quantity``), one record per kind.

A kind is its keys, its validation when the experiment file is loaded (before any compute), its height and
its drawing, in one module of this package that calls ``register``; ``experiment.load`` validates a panel by
its kind and ``plots.figure`` draws it. A new kind is one module, imported at the bottom of this file.
Loading an experiment validates its panels without matplotlib: a kind's module imports it where it draws.

A kind takes the keys its ``keys`` lists, and no other; the values of the keys several kinds share are declared
in ``sgi_run.figures.schema`` (``PANEL``), its ``check`` refuses the values of its own it cannot draw. Among
them: ``observable`` (default: the experiment's), ``reference`` (a horizontal line at a system reference value,
e.g. ``ergodic_energy``), ``xlim``, ``ylim``, ``yscale``, ``ylabel``, ``exact`` (draw the exact mean),
``colours: by_position`` (the n-th curve of every such panel has the same colour, e.g. one curve per friction
value per method), ``reference_label`` / ``density_label`` (the legend text of the reference line or of the
exact density, instead of the one derived from the reference's kind and observable).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class PanelKind:
    name: str                      # the panel's ``quantity``
    keys: tuple[str, ...]          # every key a panel of this kind takes (the schema refuses any other)
    check: Callable[..., None]     # (panel, k, where, runs, studies) -> None: refuses (ConfigError) what it cannot draw
    height: float                  # inches of data area (a panel grows to fit its legend)
    draw: Callable[..., int]       # (ax, exp, panel, data, styles: run id -> layout.CurveStyle) -> how many ±2 SE bands (studies: error bars) it drew
    studies: bool = False          # draws convergence studies (plan=convergence) with error bars, not ensembles
    # (panel, k, where) -> None: sets panel["runs"] from its other keys (a scan panel's series); such a kind is
    # checked before the checks every panel gets, as they read its runs.
    runs_from: Callable[..., None] | None = None
    projection: str | None = None  # of its axes, e.g. "3d"
    maps: Callable[..., int] | None = None   # (panel, data) -> how many maps it draws side by side
    grid: bool = True              # grid lines on its axes (not on a 3-D axes nor under a row of maps)
    title_pad: float | None = None   # points between its title and its axes (above its maps' own titles)
    # What it calls on its run's system or integrator, as a refusal names it (``name(arguments)``): refused
    # before any compute where they have none (experiment.check_against_runs).
    needs_system_method: str | None = None
    needs_integrator_method: str | None = None
    # (panel, data) -> what the figure's footer says of how the panel's values were measured ("" for nothing).
    footer: Callable[..., str] | None = None
    # (panel, data) -> (a sentence, header, rows): the values the panel draws, as the figure's table. A figure whose
    # panels all have one shows these instead of its runs' E(observable)(T), which such a panel does not draw.
    table: Callable[..., tuple] | None = None


# In the order an unknown kind's refusal lists them: the order of the imports below.
PANEL_KINDS: dict[str, PanelKind] = {}


def register(kind: PanelKind) -> PanelKind:
    PANEL_KINDS[kind.name] = kind
    return kind


# Every kind's module registers it: imported here, the registry is full whenever it is read.
from sgi_run.figures.panels import time, density, convergence, path, sphere, scan, field, potential, solvability  # noqa: E402, F401
from sgi_run.figures.panels import joint_density, work_precision  # noqa: E402, F401
