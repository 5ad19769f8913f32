"""Panel kind ``sphere`` (3-D): the kept state view ``solid``, e.g. gamma, on the shaded sphere of its initial
radius, and ``dashed``, e.g. pi; ``red`` runs drawn red from a red dot, ``select`` the kept path a rule picks,
``at`` every kept path's point at one time, ``contours`` the energy's level sets and separatrix, ``view`` the
angles: Gay-Balmaz & Wu (2024) Figs 1, 2; ``symbol`` the solid view's symbol as the paper writes it, a letter or a Greek
letter's name (Ephrati et al. 2024 Fig. 1: x, the vortices x_1 ... x_4) or mathtext ("$\\Pi$", "$R e_3$"), not the observable's
name; ``fit: true`` axes fitted to the curves without the sphere (Gay-Balmaz & Wu 2024 Fig. 4 (a): Π moves in a small circle
of the plane Π_z = 1, a blob on the unit sphere)."""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.layout import style
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.panels.validate import check_path_index, is_integer, is_number
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import SELECTION_RULES, energy_levels, select_path, sphere_energy

# State views along one kept path, one on the sphere of its initial radius; or every kept path's point at one
# time `at`; `select` a kept path by a rule, `contours` of the energy, runs drawn `red`.
PANEL_KEYS = ("quantity", "runs", "solid", "dashed", "path", "title", "colours", "black", "red", "select", "at",
        "contours", "view", "symbol", "fit")


def _check_sphere(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    for key in ("solid", "dashed"):
        require(k(f"{where}.{key}"), panel.get(key), panel.get(key) is None or isinstance(panel[key], str),
                "a state view the runs keep along their paths (e.g. gamma, pi)")
    check_path_index(panel, k, where)
    require(k(f"{where}.symbol"), panel.get("symbol"),
            panel.get("symbol") is None or (isinstance(panel["symbol"], str) and (
                panel["symbol"].isalpha() or (len(panel["symbol"]) > 2 and panel["symbol"][0] == panel["symbol"][-1] == "$"))),
            "the paper's symbol for the solid view: a letter or a Greek letter's name (x, pi) or mathtext ($\\Pi$)")
    require(k(f"{where}.fit"), panel.get("fit"), isinstance(panel.get("fit", False), bool), "true or false")
    for key, how in (("black", "drawn black"), ("red", "drawn red, their start a red dot")):
        require(k(f"{where}.{key}"), panel.get(key),
                isinstance(panel.get(key, []), list) and all(r in panel["runs"] for r in panel.get(key, [])),
                f"a list of this panel's runs, {how}")
    _check_sphere_extras(panel, k, where)


def _check_sphere_extras(panel: dict, k, where: str) -> None:
    """A sphere panel's optional selection of a kept path, snapshot time, energy contours and view angles."""
    select = panel.get("select")
    require(k(f"{where}.select"), select,
            select is None or (isinstance(select, dict) and set(select) <= {"run", "rule", "orbit"}
                               and select.get("run") in panel["runs"] and select.get("rule") in SELECTION_RULES
                               and select.get("orbit", panel["runs"][0]) in panel["runs"]
                               and (select["rule"] != "farthest_crossing" or "orbit" in select)),
            f"{{run: a run of this panel, rule: one of {list(SELECTION_RULES)}, orbit: the "
            "panel's run whose kept path is the deterministic orbit (farthest_crossing needs it)}")
    require(k(f"{where}.at"), panel.get("at"), panel.get("at") is None or (is_number(panel["at"]) and panel["at"] >= 0),
            "an output time >= 0 (every kept path's point at it)")
    require(k(f"{where}.contours"), panel.get("contours"),
            panel.get("contours") is None or (is_integer(panel["contours"]) and panel["contours"] >= 1),
            "how many energy levels to draw (an integer >= 1)")
    view = panel.get("view")
    require(k(f"{where}.view"), view,
            view is None or (isinstance(view, list) and len(view) == 2 and all(is_number(v) for v in view)),
            "[elevation, azimuth] in degrees")


def _sphere_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """A 3-D panel (``ax`` has ``projection="3d"``): the state view ``solid`` (e.g. gamma) along one
    kept path, drawn solid on the grey-shaded sphere of its initial radius, and ``dashed`` (e.g. pi)
    dashed, of each run (Luesink et al. 2023, Figs 1-3). A view of several vectors (point vortices: (t, k, 3)) draws
    one curve per vector, one colour each; the runs listed in ``black`` are drawn black (e.g. the
    deterministic paths of Ephrati et al. (2024) Figure 1), those in ``red`` red with their initial point a red dot (Gay-Balmaz & Wu 2024
    Figs 1, 2: the deterministic path from Pi0). ``select: {run, rule, orbit}`` draws the kept path of ``run`` a
    rule picks (statistics.SELECTION_RULES; ``orbit``: the run whose path is the deterministic orbit), ``at`` a
    time draws every kept path's point at that time instead of paths (Gay-Balmaz & Wu 2024 Fig. 2), and ``contours: n``
    draws n level sets of the first run's energy on the sphere and its separatrix in black (Gay-Balmaz & Wu 2024 Figs 1, 2)."""
    solid, dashed, at = panel.get("solid", "gamma"), panel.get("dashed"), panel.get("at")
    # The paper's symbol for the solid view (Ephrati et al. 2024 writes x where the rigid body's view is named pi).
    name = _mathtext(panel.get("symbol") or solid)
    radius = 0.0
    for run_id in panel["runs"]:
        run, colour, label = data[run_id], styles[run_id].colour, exp.runs[run_id].label
        paths, note = _sphere_paths(panel, run_id, data)
        black, red = run_id in panel.get("black", []), run_id in panel.get("red", [])
        tone = "k" if black else "red" if red else colour
        if at is not None:
            radius = max(radius, _sphere_points(ax, run, solid, paths, at, tone, f"{label}{note}", name))
            continue
        if not paths:
            ax.plot([], [], color=tone, lw=1.0, label=f"{label}{note}")
        for path in paths:
            x = run.kept_view(solid, path)
            vectors = [x] if x.ndim == 2 else [x[:, i] for i in range(x.shape[1])]   # (t, 3) or (t, k, 3)
            for i, v in enumerate(vectors):
                radius = max(radius, float(np.linalg.norm(v[0])))
                # Several vectors (point vortices): one colour each, unless the run is drawn black.
                shade = tone if black or red or len(vectors) == 1 else style(i).colour
                # Several vectors: each its indexed symbol, x_1 ... x_4 (the paper's x_i of vortex i).
                indexed = len(vectors) > 1 and not black
                text = f"{label}{note}: {_indexed(name, i + 1) if indexed else name}" + (" (solid)" if dashed else "")
                # Fitted, a black reference run is thin: its many loops in a small circle (Gay-Balmaz & Wu 2024 Fig. 8 (a): the
                # deterministic Π inside the stochastic one) filled a disc at 1 pt.
                width = 0.4 if black and panel.get("fit") else 1.0
                ax.plot(*v.T, color=shade, lw=width, label=text if i == 0 or not black else "_nolegend_")
                if red:
                    ax.plot(*v[0][:, None], "o", color="red", ms=5, label=f"{name}(0) = "
                            f"({', '.join(f'{c:.4g}' for c in v[0])})")
            if dashed:
                y = run.kept_view(dashed, path)
                ax.plot(*y.T, color="k" if black else colour, lw=0.9, ls="--", alpha=0.8, label=f"{label}: {symbol(dashed)} (dashed)")
    if panel.get("view"):
        ax.view_init(*panel["view"])
    if panel.get("fit"):
        _fit_axes(ax, [data[r].kept_view(v, panel.get("path", 0)) for r in panel["runs"] for v in (solid, dashed) if v])
    else:
        u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 41), np.linspace(0, np.pi, 21))
        ax.plot_surface(radius * np.cos(u) * np.sin(v), radius * np.sin(u) * np.sin(v), radius * np.cos(v),
                        color="0.6", alpha=0.18, lw=0, shade=False, rasterized=True)   # an image in PDF and SVG: smaller
        ax.plot([], [], "s", color="0.6", alpha=0.4, label=f"sphere {_norm_text(name)} = {radius:.4g}")
        if panel.get("contours"):
            _energy_contours(ax, data[panel["runs"][0]].system, radius, panel["contours"])
        ax.set_box_aspect((1, 1, 1))
        extent = max(radius, *(float(np.nanmax(np.abs(data[r].kept_view(v, panel.get("path", 0))))) for r in panel["runs"]
                               for v in (solid, dashed) if v))
        for set_lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
            set_lim(-extent, extent)
    ax.set_xlabel("x", labelpad=-2)
    ax.set_ylabel("y", labelpad=-2)
    ax.set_zlabel("z", labelpad=-2)
    ax.tick_params(labelsize=7, pad=0)
    return 0


def _fit_axes(ax, curves: list[np.ndarray]) -> None:
    """Axes fitted to the curves, each axis to its own range (5% margin), no sphere: a curve far smaller than
    its sphere (the heavy top's Π, in the plane Π_z = 1 about (0, 0, 1) on the sphere of radius 1) reads as a
    curve instead of a blob. An axis the curves hardly span (a plane) gets a fifth of the widest range, so the
    box does not collapse to a sheet."""
    points = np.concatenate([c.reshape(-1, 3) for c in curves])
    low, high = np.nanmin(points, axis=0), np.nanmax(points, axis=0)
    span = high - low
    half = np.maximum(span, 0.2 * span.max()) * 0.55
    centre = (low + high) / 2
    for set_lim, c, h in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre, half):
        set_lim(c - h, c + h)
    ax.set_box_aspect(tuple(half / half.max()))
    from matplotlib.ticker import MaxNLocator
    for axis, h in zip((ax.xaxis, ax.yaxis, ax.zaxis), half):   # a short axis, fewer ticks: they did not overlap
        axis.set_major_locator(MaxNLocator(nbins=max(2, round(6 * h / half.max()))))


def _mathtext(name: str) -> str:
    """A symbol as the legend writes it: mathtext as given, a letter or a Greek letter's name set (pi -> $\\pi$)."""
    return name if name.startswith("$") else symbol(name)


def _indexed(name: str, index: int) -> str:
    """The symbol of vector ``index`` of several: $x$ -> $x_{1}$ (the paper's x_i of vortex i)."""
    return f"{name[:-1]}_{{{index}}}$" if name.startswith("$") else f"{name}{index}"


def _norm_text(name: str) -> str:
    """"$|\\Pi|$" of a view's mathtext symbol, "|body_axis|" of a name without one."""
    return f"${chr(124)}{name.strip(chr(36))}{chr(124)}$" if name.startswith("$") else f"|{name}|"


def _sphere_paths(panel: dict, run_id: str, data: dict[str, RunData]) -> tuple[list[int], str]:
    """(the kept paths a sphere panel draws of a run, a note for its label): the one its ``select`` rule picks
    (none when no kept path qualifies), every kept path at a time ``at``, else ``path``."""
    select = panel.get("select")
    if select and select["run"] == run_id:
        orbit = data[select["orbit"]] if select.get("orbit") else None
        chosen = select_path(data[run_id], select["rule"], orbit)
        if chosen.path is None:
            return [], f" (no kept path qualifies: {chosen.text().replace('; ', ', ')})"
        # A reader's label: which path, and the number the rule picked it by (the panel's title says the rule).
        what = ("max |E - E0| = {:.3g}, least of {}" if chosen.rule == "least_energy_change"
                else "{:.3g} from the deterministic orbit, farthest of {}")
        return [chosen.path], f" (path {chosen.path} of {chosen.kept}; {what.format(chosen.score, chosen.qualifying)})"
    if panel.get("at") is not None:
        return list(range(len(data[run_id].kept[panel.get("solid", "gamma")]))), ""
    return [panel.get("path", 0)], ""


def _sphere_points(ax, run: RunData, view: str, paths: list[int], at: float, tone, label: str,
                   name: str | None = None) -> float:
    """Every listed kept path's ``view`` at output time ``at`` as a point (one realisation each: Gay-Balmaz & Wu (2024) Fig. 2's
    ensemble forecast); returns the sphere's radius (|view(0)| of the first path)."""
    i = run.output_index(at)
    points = np.array([run.kept_view(view, p)[i] for p in paths]) if i is not None else np.empty((0, 3))
    count = f"{len(paths)} kept paths" if len(paths) > 1 else "kept path"
    text = f"{label}: {name or symbol(view)} at the panel's time ({count})" if i is not None else f"{label}: no output time t = {at:g}"
    ax.plot(*points.T, "o", color=tone, ms=4 if len(paths) > 1 else 6, ls="none", label=text)
    return float(np.linalg.norm(run.kept_view(view, paths[0])[0])) if paths else 0.0


def _energy_contours(ax, system, radius: float, count: int) -> None:
    """``count`` level sets of the system's energy on the sphere of ``radius`` (thin) and its separatrix (thicker),
    black, on the hemisphere facing the viewer only (the far side's would show through the shaded sphere and
    cross the paths): computed on a (theta, phi) mesh from the run's own hamiltonian (statistics.sphere_energy;
    Gay-Balmaz & Wu (2024) Figs 1, 2)."""
    import contourpy

    theta, phi, energy = sphere_energy(system, radius)
    levels, separatrix = energy_levels(system, radius, count)
    lines = contourpy.contour_generator(phi, theta, energy, line_type="Separate")
    elev, azim = np.radians(ax.elev), np.radians(ax.azim)
    eye = np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)])
    for level, width in [*((float(e), 0.45) for e in levels), (separatrix, 1.1)]:
        for line in lines.lines(level):
            p, t = line[:, 0], line[:, 1]
            xyz = radius * np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)])
            xyz[:, eye @ xyz < 0] = np.nan      # the far hemisphere
            ax.plot(*xyz, color="k", lw=width, alpha=0.7)
    ax.plot([], [], color="k", lw=0.45, label=f"energy contours: {count} levels in ({levels[0]:.4g}, {levels[-1]:.4g})")
    ax.plot([], [], color="k", lw=1.1, label=f"separatrix E = {separatrix:.6g}")


register(PanelKind("sphere", PANEL_KEYS, _check_sphere, 5.0, _sphere_panel, projection="3d", grid=False))
