"""Drawing: what a panel shows (the project's layout for diverging runs in Bou-Rabee & Owhadi 2007 Figs 2.1, 2.2) and the conventions
every figure follows: the paper's figure name in the heading, legends outside the data, readable
labels, off-scale curves marked where they leave, bands only where they mean something, a compact
footer. Checked on the matplotlib objects, not on pixels."""
import dataclasses
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.text import Annotation

from sgi_run.figures import plots
from sgi_run.figures.layout import PALETTE, Layout, style as curve_style
from sgi_run.figures.panels import path as path_kind
from sgi_run.figures.panels import potential as potential_kind
from sgi_run.figures.panels import solvability as solvability_kind
from sgi_run.figures.panels import style
from sgi_run.figures.panels import time as time_kind
from sgi_run.figures.results import RunData, Series

T = np.arange(0.0, 11.0)
HEADING = "Bou-Rabee & Owhadi (2007), Figure 2.1: Cubic oscillator"
SYSTEM = SimpleNamespace(equilibrium_mean=lambda observable: 0.97910 if observable == "two_H" else None,
                         initial_density_x=lambda x: np.ones_like(x))


def _run(mean, sem=0.01, nonfinite=None, paths=100, t=T, snapshot=None):
    mean = np.asarray(mean, float)
    sem = np.broadcast_to(np.asarray(sem, float), mean.shape)
    nonfinite = np.zeros(len(t), int) if nonfinite is None else np.asarray(nonfinite)
    return RunData({"two_H": Series(t, mean, sem)}, "two_H", SYSTEM,
                   snapshot or (lambda at: None), paths, nonfinite)


def _exp(labels: dict, panels: list):
    return SimpleNamespace(observable="two_H", heading=HEADING, panels=panels, paper="bou_rabee_owhadi",
                           figure="fig2_1", title="Cubic oscillator",
                           runs={r: SimpleNamespace(label=label, colour=None) for r, label in labels.items()},
                           layout=Layout())


def _table(data: dict, labels: dict, T_end=10.0):
    return [{"run": r, "label": labels[r], "paths": data[r].paths, "T": T_end} for r in data]


def _figure(panels, data, labels, fidelity="smoke"):
    """The figure ``plots.draw`` saves, kept open to be inspected."""
    drawn = []
    original = plt.close
    plt.close = lambda fig=None: drawn.append(fig)
    try:
        path = plots.draw(_exp(labels, panels), data, _table(data, labels), fidelity, _figure.tmp / "figure.png")
    finally:
        plt.close = original
    assert path.stat().st_size > 0
    (fig,) = drawn
    return fig


def _footer(fig) -> str:
    return fig.texts[-1].get_text().replace("\n", " ")


@pytest.fixture(autouse=True)
def _close_figures(tmp_path):
    _figure.tmp = tmp_path
    yield
    plt.close("all")


# --- a diverging run ------------------------------------------------------------------------------------
def _panel(mean, nonfinite, panel=None):
    run = _run(mean, nonfinite=nonfinite)
    exp = _exp({"r": "SVIB, c=10"}, [])
    _fig, ax = plt.subplots()
    bands = time_kind._time_panel(ax, exp, {"quantity": "mean", "runs": ["r"], **(panel or {})}, {"r": run}, {"r": curve_style(0)})
    return ax, bands


def test_a_diverged_run_is_truncated_and_says_when_in_its_legend():
    exploding = np.where(T < 4, 1.0, 1e9)
    nonfinite = np.where(T < 6, 0, 100)
    ax, _ = _panel(exploding, nonfinite)
    (line,) = ax.get_lines()
    assert line.get_label() == "SVIB, c=10 (diverged at t=4; all 100 paths non-finite at T)"
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_diverged_run_says_how_many_paths_it_lost():
    ax, _ = _panel(np.where(T < 4, 1.0, 1e9), np.where(T < 6, 0, 37))
    (line,) = ax.get_lines()
    assert line.get_label() == "SVIB, c=10 (diverged at t=4; 37 of 100 paths non-finite at T)"


def test_a_finite_run_keeps_its_whole_curve_and_label():
    ax, bands = _panel(np.ones_like(T), np.zeros_like(T, dtype=int))
    (line,) = ax.get_lines()
    assert line.get_label() == "SVIB, c=10" and len(line.get_xdata()) == len(T)
    assert bands == 1


def test_a_diverged_run_has_no_band_at_or_past_its_divergence():
    """Old code shaded the divergence time itself, where the SE is near the float limit: a stray
    vertical stripe across the panel."""
    exploding = np.where(T < 4, 1.0, 1e9)
    ax, bands = _panel(exploding, np.where(T < 6, 0, 100))
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    shaded_t = np.concatenate([p.vertices[:, 0] for p in band.get_paths()])
    assert bands == 1 and shaded_t.max() < 4


def test_no_band_around_a_curve_that_is_off_the_fixed_scale():
    rising = np.where(T < 3, 1.0, 50.0)     # leaves ylim [-1, 3] at t = 3 with a wide SE
    ax, _ = _panel(rising, None, {"ylim": [-1, 3]})
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    shaded_t = np.concatenate([p.vertices[:, 0] for p in band.get_paths()])
    assert shaded_t.max() < 3


# --- the conventions of every figure --------------------------------------------------------------------
LABELS = {"a": "SVIA, c=1", "b": "SVIB, c=1", "c": "SVIC, c=30"}


def _three_runs(paths=(100, 100, 100), sem=0.01):
    rise = np.linspace(-0.5, 434, len(T))
    return {"a": _run(np.ones_like(T), sem, paths=paths[0]), "b": _run(np.ones_like(T) * 1.1, sem, paths=paths[1]),
            "c": _run(rise, sem, paths=paths[2])}


def test_the_heading_cites_the_paper_and_its_figure_name():
    fig = _figure([{"quantity": "mean", "runs": ["a"]}], _three_runs(), LABELS)
    assert fig.get_suptitle().replace("\n", " ") == HEADING


def test_every_legend_stands_outside_its_axes():
    panels = [{"quantity": "mean", "runs": ["a", "b", "c"], "reference": "equilibrium_mean:two_H"},
              {"quantity": "mean", "runs": ["a", "b"]}]
    fig = _figure(panels, _three_runs(), LABELS)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend, data_area = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        assert legend.x0 >= data_area.x1, "the legend overlaps the data area"
        assert legend.x1 <= fig.bbox.x1 + 1, "the legend is cut off by the figure's edge"


def test_reference_lines_and_exact_densities_have_readable_labels():
    snapshot = lambda at: {"x": np.linspace(0, 1, 500)}
    data = {"a": _run(np.ones_like(T), snapshot=snapshot)}
    panels = [{"quantity": "mean", "runs": ["a"], "reference": "equilibrium_mean:two_H"},
              {"quantity": "density", "runs": ["a"], "coordinate": "x", "at": 0, "bins": 10, "range": [0, 1],
               "density": "initial_density_x"}]
    fig = _figure(panels, data, {"a": "SVIA"})
    mean_labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    density_labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "2<H> at equilibrium = 0.9791" in mean_labels
    assert "exact initial density" in density_labels
    assert not any("equilibrium_mean" in t or "initial_density_x" in t for t in mean_labels + density_labels)


def test_a_panel_can_name_its_reference_and_density_itself():
    snapshot = lambda at: {"x": np.linspace(0, 1, 500)}
    data = {"a": _run(np.ones_like(T), snapshot=snapshot)}
    panels = [{"quantity": "mean", "runs": ["a"], "reference": "equilibrium_mean:two_H",
               "reference_label": "Boltzmann-Gibbs 2<H>"},
              {"quantity": "density", "runs": ["a"], "coordinate": "x", "at": 0, "bins": 10, "range": [0, 1],
               "density": "initial_density_x", "density_label": "(4.12)"}]
    fig = _figure(panels, data, {"a": "SVIA"})
    assert "Boltzmann-Gibbs 2<H>" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "(4.12)" in [t.get_text() for t in fig.axes[1].get_legend().get_texts()]


def test_a_curve_that_leaves_the_y_range_is_marked_where_it_leaves_with_where_it_went():
    fig = _figure([{"quantity": "mean", "runs": ["a", "c"], "ylim": [-0.6, 3]}], _three_runs(), LABELS)
    ax = fig.axes[0]
    notes = [c for c in ax.get_children() if isinstance(c, Annotation)]
    assert [n.get_text() for n in notes] == ["↑ 434 at t=10"]
    t_exit, level = notes[0].xy
    assert level == 3 and 0 < t_exit < 1       # rises from -0.5 by 43.45 per unit time: crosses 3 at t = 0.08
    markers = [line for line in ax.get_lines() if line.get_marker() == "^"]
    assert len(markers) == 1 and markers[0].get_ydata()[0] == 3


def test_the_footer_mentions_bands_only_when_a_band_is_drawn():
    with_bands = _figure([{"quantity": "mean", "runs": ["a", "b"]}], _three_runs(), LABELS)
    assert "±2 SE" in _footer(with_bands)
    one_path = {r: _run(np.ones_like(T), sem=np.nan, paths=1) for r in ("a", "b")}   # a single path has no SE
    without = _figure([{"quantity": "mean", "runs": ["a", "b"]}], one_path, LABELS)
    assert "SE" not in _footer(without) and "band" not in _footer(without)
    assert "1 path each" in _footer(without)


def test_a_density_figure_has_no_band_in_its_footer():
    data = {"a": _run(np.ones_like(T), snapshot=lambda at: {"x": np.linspace(0, 1, 100)}, paths=20000)}
    fig = _figure([{"quantity": "density", "runs": ["a"], "coordinate": "x", "at": 0, "bins": 10,
                    "range": [0, 1]}], data, {"a": "sampled"})
    assert _footer(fig) == "smoke fidelity; T = 10; 20,000 paths"


def test_the_footer_groups_path_counts():
    fig = _figure([{"quantity": "mean", "runs": ["a", "b", "c"]}], _three_runs(paths=(10000, 10000, 2000)), LABELS)
    assert "10⁴ paths each, except 2000 (SVIC, c=30)" in _footer(fig)
    assert "SVIA" not in _footer(fig)
    same = _figure([{"quantity": "mean", "runs": ["a", "b", "c"]}], _three_runs(paths=(1000,) * 3), LABELS)
    assert "10³ paths each" in _footer(same)


def test_horizons_and_counts_read_compactly():
    table = [{"label": "A", "T": 999.9, "paths": 160000}, {"label": "B", "T": 999.9, "paths": 160000},
             {"label": "C", "T": 1000, "paths": 5000}, {"label": "D", "T": 1000, "paths": 2000}]
    assert plots.horizon_text(table) == "T = 999.9, except 1000 (C / D)"
    assert plots.paths_text(table) == "160,000 paths each, except 5000 (C), 2000 (D)"
    assert [style.count_text(n) for n in (1, 200, 1000, 10**7, 20000)] == ["1", "200", "10³", "10⁷", "20,000"]


def test_a_panel_whose_time_window_has_no_data_says_so():
    panels = [{"quantity": "mean", "runs": ["a"], "xlim": [4000, 5000]}]
    fig = _figure(panels, _three_runs(), LABELS)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["nothing to draw: the runs end at T = 10, before t = 4000"]


def test_runs_sharing_a_panel_differ_in_colour_line_style_and_marker_and_keep_a_named_colour():
    """Told apart in grey print (line style and marker) and by colour-blind readers (Okabe-Ito's palette)."""
    runs = {f"r{i}": f"run {i}" for i in range(14)}
    exp = _exp(runs, [{"runs": [f"r{i}" for i in range(6)]}, {"runs": [f"r{i}" for i in range(6, 14)]},
                      {"runs": ["r0", "r13"]}])
    exp.runs["r13"].colour = "vermillion"
    styles = plots.run_styles(exp)
    for panel in exp.panels:
        shown = [styles[r] for r in panel["runs"]]
        assert len({(s.linestyle, s.marker) for s in shown}) == len(shown)
        assert len({s.colour for s in shown[:len(PALETTE)]}) == min(len(shown), len(PALETTE))
        assert all(s.colour in PALETTE.values() for s in shown)
    assert styles["r13"].colour == PALETTE["vermillion"] and styles["r0"].colour == PALETTE["blue"]


def test_panels_stand_on_the_layouts_grid_with_letters_and_one_shared_legend():
    data = _three_runs()
    exp = _exp(LABELS, [{"quantity": "mean", "runs": ["a", "b"], "title": "first"},
                        {"quantity": "mean", "runs": ["a", "c"]}, {"quantity": "mean", "runs": ["b"]}])
    exp.layout = Layout(columns=2, legend="shared", letters=True)
    drawn = []
    original = plt.close
    plt.close = lambda fig=None: drawn.append(fig)
    try:
        plots.draw(exp, data, _table(data, LABELS), "smoke", _figure.tmp / "grid.png")
    finally:
        plt.close = original
    (fig,) = drawn
    first, second, third = fig.axes
    assert first.get_subplotspec().rowspan.start == second.get_subplotspec().rowspan.start == 0
    assert second.get_position().x0 > first.get_position().x1 and third.get_subplotspec().rowspan.start == 1
    assert [ax.get_title() for ax in fig.axes] == ["(a) first", "(b)", "(c)"]
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [LABELS["a"], LABELS["b"], LABELS["c"]]   # each run once
    fig.canvas.draw()
    assert legend.get_window_extent().x0 >= second.get_window_extent().x1     # beside the grid, not over it
    for suffix in (".pdf", ".svg"):     # vector formats beside the PNG, for print
        assert (_figure.tmp / "grid.png").with_suffix(suffix).stat().st_size > 0


def test_long_legend_labels_wrap_at_a_parenthesis_or_semicolon():
    assert plots.wrap_label("SVIB, c=10 (diverged at t=1.5; 9999 of 10,000 paths non-finite at T)") == \
        "SVIB, c=10 (diverged at t=1.5;\n  9999 of 10,000 paths non-finite at T)"
    assert plots.wrap_label("DIRK, Δt=0.15") == "DIRK, Δt=0.15"


# --- convergence panels (runs with plan=convergence) ------------------------------------------------
@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    """A real convergence study, as small as one goes: Heun on Kubo, 64 paths, two step sizes."""
    import sgi_run
    from sgi_run.figures.results import StudyData
    root = tmp_path_factory.mktemp("runs")
    r = sgi_run.run(sgi_run.compose(["system=kubo", "integrator=heun", "plan=convergence", "plan.paths=64",
                                     "plan.dts=[0.25,0.125]", "plan.T=1", f"output_root={root}", "progress=off"]))
    return StudyData(r.result, r.attrs["observable"], float(r.attrs["T"]))


def _unresolved_study():
    """A weak study whose two finer errors are within 2 SE of zero: no order is fitted."""
    from sgi_run.engine.convergence import ConvergenceResult
    from sgi_run.figures.results import StudyData
    error, se = np.array([-1.2e-2, -3e-4, 2e-4]), np.array([3e-4, 3e-4, 3e-4])
    result = ConvergenceResult("weak", "exact", "independent", np.array([0.25, 0.125, 0.0625]), error, se,
                               np.abs(error) > 2 * se, np.nan, (np.nan, np.nan), np.zeros(3, int), 10**6, "")
    return StudyData(result, "H", 1.0)


@pytest.mark.slow
def test_a_convergence_panel_draws_errors_bars_orders_and_reference_slopes(tiny_study):
    data = {"heun": tiny_study, "weak": _unresolved_study()}
    labels = {"heun": "Heun", "weak": "SRKw2"}
    fig = _figure([{"quantity": "convergence", "runs": ["heun", "weak"], "slopes": [0.5, 1], "title": "orders"}],
                  data, labels)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_title() == "orders"
    r = tiny_study.result
    legend = [t.get_text().replace("\n  ", " ") for t in ax.get_legend().get_texts()]
    assert legend[0] == f"Heun: order {r.order:.2f} [{r.order_ci[0]:.2f}, {r.order_ci[1]:.2f}]"
    assert legend[1:] == ["SRKw2: no order (< 2 errors resolvable)", "reference slope 0.5 (∝ Δt⁰·⁵)",
                          "reference slope 1 (∝ Δt¹)", "open: |error| ≤ 2 SE (not fitted)"]
    # ±2 SE error bars around |error| at every step size.
    heun_bars = ax.containers[0].lines[2][0].get_segments()
    assert [tuple(s[:, 0]) for s in heun_bars] == [(0.25, 0.25), (0.125, 0.125)]
    assert [s[1, 1] - s[0, 1] for s in heun_bars] == pytest.approx(list(4 * r.se))
    # Open markers exactly at the unresolvable points of the second study.
    open_points = [line for line in ax.get_lines() if line.get_markerfacecolor() == "white" and len(line.get_xdata())]
    assert len(open_points) == 1 and list(open_points[0].get_xdata()) == [0.125, 0.0625]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["$2^{-4}$", "$2^{-3}$", "$2^{-2}$"]
    assert ax.get_ylabel() == "|error| at T = 1"
    footer = _footer(fig)
    assert "error bars: ±2 SE (Monte Carlo standard error)" in footer and "shaded" not in footer
    assert "64 paths each, except 10⁶ (SRKw2)" in footer


def test_the_reference_slope_lies_below_every_curve(tiny_study):
    fig = _figure([{"quantity": "convergence", "runs": ["heun"], "slopes": [1]}], {"heun": tiny_study}, {"heun": "Heun"})
    ax = fig.axes[0]
    (slope,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    x, y = slope.get_data()
    assert list(x) == [0.125, 0.25] and y[1] / y[0] == pytest.approx(2.0)
    assert y[1] < abs(tiny_study.result.error[0]) and ax.get_ylabel() == "RMS error of the state at T = 1"
    fig.canvas.draw()
    legend, data_area = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= data_area.x1      # outside the data, as in every panel


# --- path panels: an observable along one kept path ----------------------------------------------------
def _one_path(values: dict, t=T):
    return RunData({k: Series(t, np.asarray(v, float), np.full_like(t, np.nan), None, kept=np.asarray(v, float)[None])
                    for k, v in values.items()}, next(iter(values)), SYSTEM, lambda at: None, 1, np.zeros(len(t), int))


def _path_axes(panel, runs: dict):
    exp = SimpleNamespace(observable="C1", runs={r: SimpleNamespace(label=r.upper()) for r in runs})
    _fig, ax = plt.subplots()
    bands = path_kind._path_panel(ax, exp, {"quantity": "path", "runs": list(runs), **panel}, runs,
                                  {r: curve_style(i) for i, r in enumerate(runs)})
    return ax, bands


def test_a_path_panel_draws_the_deviation_from_t0_with_no_band():
    drift = 1 + 1e-9 * T
    ax, bands = _path_axes({}, {"im": _one_path({"C1": drift})})
    line = ax.get_lines()[0]
    assert bands == 0 and line.get_label() == "IM"
    np.testing.assert_allclose(line.get_ydata(), 1e-9 * T, atol=1e-15)
    assert ax.get_ylabel() == "$C_{1}(t) - C_{1}(0)$" and ax.get_yscale() == "linear"


def test_a_path_panel_draws_several_observables_one_style_each_and_absolute_on_a_log_axis():
    run = _one_path({"C1": 1 - 1e-14 * T, "C2": 1 + 2e-14 * T})
    ax, _ = _path_axes({"observable": ["C1", "C2"], "deviation": 1, "absolute": True, "yscale": "log"},
                       {"tmk": run})
    c1, c2 = ax.get_lines()
    assert c1.get_label() == "$|C_{1}(t) - 1|$" and c2.get_label() == "$|C_{2}(t) - 1|$"   # one run: no prefix
    assert c1.get_linestyle() != c2.get_linestyle() and c1.get_marker() != c2.get_marker()
    both = {"tmk": run, "im": _one_path({"C1": 1 + 1e-13 * T, "C2": 1 + 3e-14 * T})}
    ax, _ = _path_axes({"observable": ["C1", "C2"], "deviation": 1, "absolute": True, "yscale": "log"}, both)
    tmk_c1, tmk_c2, im_c1, _ = ax.get_lines()
    assert tmk_c1.get_label() == "TMK: $|C_{1}(t) - 1|$" and tmk_c1.get_color() == tmk_c2.get_color() != im_c1.get_color()
    assert tmk_c1.get_linestyle() != tmk_c2.get_linestyle()
    assert ax.get_yscale() == "log"
    assert 0.0 not in list(c1.get_xdata())           # |C(0) - 1| = 0 has no place on a log axis
    assert min(c2.get_ydata()) > 0


def test_a_whole_figure_with_path_panels_draws():
    run = _one_path({"C1": 1 + 1e-9 * T})
    fig = _figure([{"quantity": "path", "runs": ["im"], "observable": "C1"},
                   {"quantity": "path", "runs": ["im"], "observable": "C1", "absolute": True, "yscale": "log"}],
                  {"im": run}, {"im": "IM"})
    assert "1 path" in _footer(fig) and "SE" not in _footer(fig)


def test_a_sphere_panel_is_3d_with_the_vector_on_the_shaded_sphere_of_its_initial_radius():
    angle = np.linspace(0, 2 * np.pi, len(T))
    gamma = np.stack([np.cos(angle), np.sin(angle), np.zeros_like(T)], -1)
    run = RunData({"C2": Series(T, np.ones_like(T), np.full_like(T, np.nan), None, kept=np.ones((1, len(T))))}, "C2",
                  SYSTEM, lambda at: None, 1, np.zeros(len(T), int), {"gamma": gamma[None], "pi": 2 * gamma[None]})
    fig = _figure([{"quantity": "sphere", "runs": ["tmk"], "solid": "gamma", "dashed": "pi"},
                   {"quantity": "path", "runs": ["tmk"], "observable": "C2"}], {"tmk": run}, {"tmk": "TMK"})
    (ax3d,) = [a for a in fig.axes if a.name == "3d"]
    assert len(fig.axes) == 2 and ax3d.get_subplotspec().rowspan.start == 0     # in the first panel's place
    labels = [line.get_label() for line in ax3d.get_lines()]
    assert labels[:2] == ["TMK: $\\gamma$ (solid)", "TMK: $\\pi$ (dashed)"] and "sphere $|\\gamma|$ = 1" in labels
    assert ax3d.get_lines()[1].get_linestyle() == "--"
    assert ax3d.collections        # the shaded sphere
    assert ax3d.get_legend() is not None and ax3d.get_xlim()[1] == pytest.approx(2.0)



def test_a_sphere_panel_names_its_vectors_by_the_papers_symbol():
    """Ephrati et al. (2024) Figure 1 writes x for the rigid body's momentum (its view is named pi) and x_i for vortex i."""
    angle = np.linspace(0, 2 * np.pi, len(T))
    one = np.stack([np.cos(angle), np.sin(angle), np.zeros_like(T)], -1)
    curve = {"H": Series(T, np.ones_like(T), np.full_like(T, np.nan), None, kept=np.ones((1, len(T))))}
    body = RunData(curve, "H", SYSTEM, lambda at: None, 1, np.zeros(len(T), int), {"pi": one[None]})
    vortices = RunData(curve, "H", SYSTEM, lambda at: None, 1, np.zeros(len(T), int),
                       {"x": np.stack([one, one[:, ::-1]], 1)[None]})
    fig = _figure([{"quantity": "sphere", "runs": ["body"], "solid": "pi", "symbol": "x"},
                   {"quantity": "sphere", "runs": ["vortices"], "solid": "x"}],
                  {"body": body, "vortices": vortices}, {"body": "rigid body", "vortices": "vortices"})
    left, right = [[line.get_label() for line in ax.get_lines()] for ax in fig.axes if ax.name == "3d"]
    assert left == ["rigid body: $x$", "sphere $|x|$ = 1"]
    assert right == ["vortices: $x_{1}$", "vortices: $x_{2}$", "sphere $|x|$ = 1"]


def test_a_fitted_sphere_panel_draws_no_sphere_and_names_the_view_by_the_papers_symbol():
    """Gay-Balmaz & Wu (2024) Fig. 4 (a): Π circles (0, 0, 1) at radius 0.1 in the plane Π_z = 1; on the unit sphere it
    was a blob. Fitted, each axis spans the curve (a flat axis a fifth of the widest), and no sphere is drawn."""
    angle = np.linspace(0, 2 * np.pi, len(T))
    pi = np.stack([0.1 * np.cos(angle), 0.1 * np.sin(angle), np.ones_like(T)], -1)
    run = RunData({"C2": Series(T, np.ones_like(T), np.full_like(T, np.nan), None, kept=np.ones((1, len(T))))}, "C2",
                  SYSTEM, lambda at: None, 1, np.zeros(len(T), int), {"pi": pi[None]})
    fig = _figure([{"quantity": "sphere", "runs": ["det"], "solid": "pi", "symbol": "$\\Pi$", "fit": True}],
                  {"det": run}, {"det": "deterministic"})
    (ax3d,) = fig.axes
    assert [line.get_label() for line in ax3d.get_lines()] == ["deterministic: $\\Pi$"]     # no sphere entry
    assert not ax3d.collections                                                       # nor its surface
    for lim, x in zip((ax3d.get_xlim(), ax3d.get_ylim()), (pi[:, 0], pi[:, 1])):      # the curve's range, 5% margins
        assert lim == pytest.approx((x.min() - 0.05 * np.ptp(x), x.max() + 0.05 * np.ptp(x)))
    low, high = ax3d.get_zlim()
    assert low < 1 < high and high - low == pytest.approx(0.2 * 0.2 * 1.1)   # flat: a fifth of the widest span


def test_legends_beside_3d_panels_in_a_grid_stay_inside_the_figure():
    """Gay-Balmaz & Wu (2024) Figs 6, 8, 11: beside a 3-D panel in the right column, tight_layout stretched the axes over
    the legend's room and the PNG cut the legend off; the figure now widens by what sticks out."""
    angle = np.linspace(0, 2 * np.pi, len(T))
    gamma = np.stack([np.cos(angle), np.sin(angle), np.zeros_like(T)], -1)
    run = RunData({"C2": Series(T, np.ones_like(T), np.full_like(T, np.nan), None, kept=np.ones((1, len(T))))}, "C2",
                  SYSTEM, lambda at: None, 1, np.zeros(len(T), int), {"gamma": gamma[None], "pi": gamma[None]})
    label = "case 3: h1,2 = m g k Γ_x,y, k1 = k2 = 0.1 and a label long enough to need the room"
    exp = _exp({"a": label}, [{"quantity": "sphere", "runs": ["a"], "solid": "pi"},
                              {"quantity": "sphere", "runs": ["a"], "solid": "gamma"},
                              {"quantity": "path", "runs": ["a"], "observable": "C2"}])
    exp.layout = Layout(columns=2)
    fig = plots.figure(exp, {"a": run}, _table({"a": run}, {"a": label}), "smoke")
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_legend().get_window_extent().x1 <= fig.bbox.x1, "a legend is cut off by the figure's edge"


def test_a_path_panel_takes_the_papers_labels_marks_what_its_y_range_cuts_and_zooms_in_y_too():
    """Gay-Balmaz & Wu (2024) Fig. 12: a spike to -80 is cut by a fixed y-range and marked with its value; a zoom on an
    x-range scales y to what it shows, not to a spike outside it; legend texts as the paper writes them."""
    y = np.where(T == 8, -80.0, np.sin(T))
    run = _one_path({"omega_phi": y, "H": np.zeros_like(T)})
    full = {"quantity": "path", "runs": ["s"], "observable": ["omega_phi", "H"], "deviation": None,
            "labels": ["$\\omega_\\phi(t)$", "$E(t)$"], "ylim": [-3, 3]}
    zoom = {"quantity": "path", "runs": ["s"], "observable": "omega_phi", "deviation": None, "xlim": [0, 5]}
    fig = _figure([full, zoom], {"s": run}, {"s": "case 3"})
    first, second = fig.axes
    assert [t.get_text() for t in first.get_legend().get_texts()] == ["$\\omega_\\phi(t)$", "$E(t)$"]
    notes = [c.get_text() for c in first.get_children() if isinstance(c, Annotation)]
    assert notes == ["↓ -80 at t=8"]
    low, high = second.get_ylim()
    assert -1.2 < low < -0.9 and 0.9 < high < 1.2        # sin over [0, 5], not the spike at t = 8


def test_a_path_panel_refuses_labels_that_do_not_match_its_observables():
    from sgi_run.core.errors import ConfigError
    with pytest.raises(ConfigError, match="labels.*a list of 2 legend texts"):
        path_kind._check_path({"observable": ["a", "b"], "labels": ["only one"]}, lambda key: key, "panels[0]", {},
                              frozenset())


# --- potential panels: the heavy top's V(theta) from a kept path's momenta -----------------------------
def test_a_potential_panel_draws_v_of_theta_at_each_time_with_its_e_prime_dashed():
    """Gay-Balmaz & Wu (2024) Figs 3, 10, 13: V(theta; p_psi(t), p_phi(t)) solid, E'(t) dashed in the same colour, per time."""
    p_phi = np.cos(0.15 * np.pi)
    run = _one_path({"p_psi": np.where(T < 5, 1.0, 0.9), "p_phi": np.full_like(T, p_phi),
                     "E_prime": np.full_like(T, 0.98 * p_phi)})
    run = dataclasses.replace(run, system=SimpleNamespace(inertia=(0.1, 0.1, 1.0), mg=0.98))
    exp = SimpleNamespace(runs={"det": SimpleNamespace(label="deterministic")})
    _fig, ax = plt.subplots()
    potential_kind._potential_panel(ax, exp, {"quantity": "potential", "runs": ["det"], "at": [0, 9]}, {"det": run}, {})
    v0, e0, turning0, v9, _e9, _turning9 = ax.get_lines()
    theta = v0.get_xdata()
    assert theta[0] == pytest.approx(0.2) and theta[-1] == pytest.approx(1.0) and ax.get_xlabel() == r"$\theta$"
    i = int(np.argmin(v0.get_ydata()))
    assert theta[i] == pytest.approx(0.5286, abs=2e-3) and v0.get_ydata()[i] == pytest.approx(0.86110, abs=1e-4)
    assert e0.get_linestyle() == "--" and e0.get_color() == v0.get_color() != v9.get_color()
    # The turning points, where V meets E', are marked; the y-range is the well's: its bottom and E' both show.
    np.testing.assert_allclose(v0.get_ydata()[np.searchsorted(theta, turning0.get_xdata())], e0.get_ydata()[0],
                               atol=2e-3)
    low, high = ax.get_ylim()
    assert low < v0.get_ydata()[i] and high > e0.get_ydata()[0] and high - low < 0.2
    assert "t = 9" in v9.get_label() and not np.allclose(v9.get_ydata(), v0.get_ydata())


# --- the rigid body on its momentum sphere, and the solvability map (Gay-Balmaz & Wu 2024 Figs 1, 2, 14)--------------
def _rigid_body_runs():
    """A deterministic orbit about -e_x and three kept stochastic paths (path 2 crosses the separatrix)."""
    import jax.numpy as jnp
    angle = 2 * np.pi * T / 10
    orbit = np.stack([-np.full_like(T, 0.6), 0.8 * np.cos(angle), 0.8 * np.sin(angle)], -1)
    system = SimpleNamespace(hamiltonian=lambda mu: 0.5 * jnp.sum(jnp.asarray(mu) ** 2 / jnp.array([1.0, 2.0, 3.0])))
    energy = 0.28 + np.array([[0.01], [0.002], [-0.04]]) * np.sin(np.pi * T / 10)
    pi = np.stack([orbit, orbit, orbit[:, [1, 0, 2]]])
    one = lambda x: Series(T, x[0], np.full_like(T, np.nan), None, kept=x)
    stochastic = RunData({"H": one(energy)}, "H", system, lambda at: None, 3, np.zeros(len(T), int), {"pi": pi})
    deterministic = RunData({"H": one(np.full((1, len(T)), 0.28))}, "H", system, lambda at: None, 1,
                            np.zeros(len(T), int), {"pi": orbit[None]})
    return {"candidates": stochastic, "deterministic": deterministic}


def test_a_sphere_panel_draws_energy_contours_a_red_run_and_the_path_a_rule_picks():
    data = _rigid_body_runs()
    panel = {"quantity": "sphere", "runs": ["deterministic", "candidates"], "solid": "pi", "red": ["deterministic"],
             "contours": 5, "view": [18, 200], "select": {"run": "candidates", "rule": "farthest_crossing",
                                                          "orbit": "deterministic"}}
    fig = _figure([panel], data, {"deterministic": "deterministic", "candidates": "stochastic"})
    (ax3d,) = [a for a in fig.axes if a.name == "3d"]
    lines = {line.get_label(): line for line in ax3d.get_lines()}
    assert lines["deterministic: $\\pi$"].get_color() == "red" and "$\\pi$(0) = (-0.6, 0.8, 0)" in lines
    # A reader's label: the path and the number it was picked by (the panel's title states the rule).
    picked = [label for label in lines if label.startswith("stochastic (path 2 of 3; ")]
    assert picked and picked[0].endswith("from the deterministic orbit, farthest of 1): $\\pi$")
    assert "separatrix E = 0.25" in lines and "energy contours: 5 levels in (0.2222, 0.4444)" in lines
    contours = [line for line in ax3d.get_lines() if line.get_label().startswith("_") and line.get_color() == "k"]
    assert len(contours) >= 6 and ax3d.elev == 18 and ax3d.azim == 200


def test_a_sphere_panel_at_a_time_draws_every_kept_paths_point():
    data = _rigid_body_runs()
    panel = {"quantity": "sphere", "runs": ["candidates", "deterministic"], "solid": "pi", "red": ["deterministic"],
             "at": 5, "title": "(a) t = 5"}
    fig = _figure([panel], data, {"deterministic": "deterministic", "candidates": "member"})
    (ax3d,) = [a for a in fig.axes if a.name == "3d"]
    members, deterministic = ax3d.get_lines()[:2]
    assert members.get_label() == "member: $\\pi$ at the panel's time (3 kept paths)" and len(members.get_data_3d()[0]) == 3
    assert deterministic.get_color() == "red" and len(deterministic.get_data_3d()[0]) == 1
    renderer = fig.canvas.get_renderer()     # a titled sphere first: its title stays below the heading
    assert ax3d.title.get_window_extent(renderer).y1 <= fig._suptitle.get_window_extent(renderer).y0


def test_a_solvability_panel_maps_the_norm_of_a_b_per_increment_vector():
    """Gay-Balmaz & Wu (2024) Fig. 14: one (theta, phi) map per fixed increment vector, from the run's integrator's half-step
    momenta (here a stand-in: A = B = pi, so ||(A, B)|| = sqrt 2 |pi|), titled with the increments."""
    import jax.numpy as jnp

    from sgi_run.integrators.lie_group_variational import HalfStepMomenta

    class Integrator:
        name = "stand-in"

        def half_step_momenta(self, system, pi, dt, dw):
            return HalfStepMomenta(pi * (1 + 0.1 * jnp.sum(jnp.abs(dw)) * pi[0] ** 2), pi, jnp.int32(3), jnp.bool_(True))

    run = RunData({"H": Series(T, np.ones_like(T), np.zeros_like(T))}, "H", SYSTEM, paths=1, dt=0.01, integrator=Integrator(),
                  increment_bound=0.42919)
    panel = {"quantity": "solvability", "runs": ["map"], "increments": [[0, 0, 0], ["D", "D", "-D"]], "radius": 2.0,
             "title": "||(A, B)||"}
    fig = _figure([panel], {"map": run}, {"map": "LGVI"})
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert [im.get_array().shape for im in images] == [(91, 181), (91, 181)]
    assert np.allclose(images[0].get_array(), 2 * np.sqrt(2))
    titles = [ax.get_title() for ax in fig.axes]
    assert any(t.startswith("ΔW = (D, D, -D), D = 0.42919\n") and "≤ 3 iterations, all converged" in t for t in titles)
    # The maps are compared: one colour scale (the least to the largest value of both), one colour bar.
    assert images[0].get_clim() == images[1].get_clim() == (pytest.approx(2 * np.sqrt(2)), images[1].get_array().max())
    bars = [ax for ax in fig.axes if ax.get_visible() and ax.get_ylabel() == "||(A, B)||"]
    assert len(bars) == 1
    # The figure's table is what the maps draw: per increment vector its least and largest norm.
    text, header, rows = solvability_kind._solvability_table(panel, {"map": run})
    assert text.startswith("The maps drawn: ‖(A, B)‖")
    assert header[:3] == ["ΔW", "min ‖(A, B)‖", "max ‖(A, B)‖"] and [r[0] for r in rows] == ["(0, 0, 0)", "(D, D, -D), D = 0.42919"]
    assert rows[0][1] == rows[0][2] == f"{2 * np.sqrt(2):.7f}" and float(rows[1][2]) == pytest.approx(images[1].get_array().max())


# --- scan panels: one value per run against its step size --------------------------------------------------
def test_a_plateau_scan_draws_each_runs_time_average_with_2_se_bars_against_dt():
    """The SVIA diagnostic: the plateau's O(h) error shows against h, where single times are within the noise."""
    from sgi_run.figures.panels import scan as scan_kind

    runs = {f"h{h}": dataclasses.replace(_run(0.98 + 0.1 * h + 0.0 * T, sem=0.02), dt=h) for h in (0.05, 0.1, 0.2)}
    exp = SimpleNamespace(observable="two_H", runs={r: SimpleNamespace(label=r) for r in runs})
    panel = {"quantity": "scan", "series": [{"label": "SVIA", "runs": list(runs)}], "runs": list(runs),
             "measure": "window_mean", "window": [2, 8], "reference": "equilibrium_mean:two_H", "yscale": "linear"}
    _fig, ax = plt.subplots()
    scan_kind._scan_panel(ax, exp, panel, runs, {})
    (bars,) = ax.containers
    line, (caps_low, caps_high) = bars.lines[0], bars.lines[1]
    np.testing.assert_allclose(line.get_xdata(), [0.05, 0.1, 0.2])
    np.testing.assert_allclose(line.get_ydata(), [0.985, 0.99, 1.0], rtol=1e-12)
    np.testing.assert_allclose(caps_high.get_ydata() - line.get_ydata(), 2 * 0.02, rtol=1e-12)   # ±2 SE
    np.testing.assert_allclose(line.get_ydata() - caps_low.get_ydata(), 2 * 0.02, rtol=1e-12)
    assert ax.get_lines()[-1].get_ydata()[0] == pytest.approx(0.9791) and "(±2 SE)" in bars.get_label()
    assert ax.get_ylim()[0] > 0.9       # not pinned at 0: the plateaus' differences show
