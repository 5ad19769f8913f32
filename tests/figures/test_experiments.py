"""Every experiment file of the repository at smoke fidelity, and its paper profile's counts.

The smoke runs are short (T cut by 10 or more, a few hundred paths), so most acceptance criteria
about late times SKIP; none may FAIL. The Lenard-Bernstein figures 4.6-4.9 share one run cache.
"""
import json
import re
from pathlib import Path

import pytest
import yaml

from sgi_run.core.errors import ConfigError
from sgi_run.figures.pipeline import compose_runs, make_figure
from sgi_run.figures.experiment import discover, load
from sgi_run.figures.results import FAIL, PASS, verdict_counts

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
ALL = discover(EXPERIMENTS)
SMOKE_DONE_ELSEWHERE = {"fig4_1"}   # tests/figures/test_pipeline.py runs it through the CLI


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("runs"))


def _by_paper(exp):
    """A figure as a test parameter that runs in its paper's process under pytest-xdist (--dist loadgroup):
    a paper's figures share runs through the module's run cache (Lenard-Bernstein 4.6-4.9, Ephrati's
    Figure 2 is Figure 10's run), which a process of its own would compute again."""
    return pytest.param(exp, marks=pytest.mark.xdist_group(exp.paper))


@pytest.mark.slow
@pytest.mark.parametrize("exp", [_by_paper(e) for e in ALL if e.figure not in SMOKE_DONE_ELSEWHERE],
                         ids=lambda e: f"{e.paper}/{e.figure}")
def test_smoke_profile_makes_the_figure_without_a_fail(exp, runs_root, tmp_path):
    outcome = make_figure(exp, "smoke", tmp_path, runs_root, log=lambda line: None)
    for key in ("png", "csv", "md", "checks", "json"):
        assert outcome.files[key].stat().st_size > 0
    failed = [c.line() for c in outcome.checks if c.verdict == FAIL]
    assert not failed, "\n".join(failed)
    assert any(c.verdict == PASS for c in outcome.checks)
    # The record is strict JSON (no NaN), and its summary counts the checks that hold by construction apart.
    record = json.loads(outcome.files["json"].read_text(), parse_constant=_refuse_constant)
    assert record["verdicts"] == verdict_counts(outcome.checks)
    assert [c["by_construction"] for c in record["checks"]] == [c.by_construction for c in outcome.checks]


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


# Checks that hold by how their runs are set up (experiment files mark them `by_construction: true`): judged,
# but counted apart. Every other check must be able to fail on a correct setup.
BY_CONSTRUCTION = {
    # the initial state is deterministic: every path starts at it
    "bou_rabee_owhadi/fig2_1": {"starts_at_H0"}, "bou_rabee_owhadi/fig2_2": {"starts_at_H0"},
    "bou_rabee_owhadi/general_constraints": {"starts_at_H0"}, "bou_rabee_owhadi/svia_diagnostics": {"starts_at_H0"},
    "bou_rabee_owhadi/step_size_bias": {"starts_at_H0"},
    "kraus_tyranowski_2021/fig4_3": {"starts_at_one"},
    # a path's initial state is drawn by its own key, whatever the method and step size
    "kraus_tyranowski_2021/fig4_10": {"shared_initial_condition"},
    # a path picked by a rule, then checked against the same rule
    "gay_balmaz_wu/fig1": {"left_never_crosses", "right_crosses"},
    # released with no nutation velocity: the release inclination is a turning point
    "gay_balmaz_wu/fig3": {"upper_turning_point"},
    # the initial vorticity is drawn on l <= L0 only
    "ephrati_2023/fig2": {"initial_large_scale_only"},
}


def test_the_checks_that_hold_by_construction_are_the_ones_marked():
    marked = {f"{e.paper}/{e.figure}": {c["id"] for c in e.checks if c.get("by_construction")} for e in ALL}
    assert {figure: ids for figure, ids in marked.items() if ids} == BY_CONSTRUCTION


PAPER_COUNTS = {   # paper/figure: (paths, T) of every run at paper fidelity, from the paper's text
    **{f"kraus_tyranowski_2021/{f}": counts for f, counts in {
        "fig4_1": (50000, 5000), "fig4_2": (50000, 5000), "fig4_3": (10**6, 5000), "fig4_4": (10**6, 5000),
        "fig4_6": (10**7, None), "fig4_7": (10**7, None), "fig4_8": (10**7, None), "fig4_9": (10**7, None),
        "fig4_10": (1, 100000), "fig4_11": (10**6, 10000)}.items()},
    # Bou-Rabee & Owhadi: 400^2 realizations
    "bou_rabee_owhadi/fig2_1": (400**2, 200), "bou_rabee_owhadi/fig2_2": (400**2, 200),
    # Luesink et al.: single realisations, dt = 0.01, T = 100 (10^4 steps); sine-Euler dt = 0.5, T = 10^4
    **{f"luesink_2023/fig{n}": (1, 100) for n in range(1, 8)},
    "luesink_2023/fig8": (1, 10000), "luesink_2023/fig9": (1, 10000),
    # Ephrati et al.: single realisations over T = 1000 (h = 2^-8); 500 realisations at T = 13 * 2^-7
    **{f"ephrati_2023/fig{n}": (1, 1000) for n in (4, 6, 8)},
    **{f"ephrati_2023/fig{n}": (500, 0.1015625) for n in (7, 9, 11)},
    "ephrati_2023/fig5": {"isomp": (500, 0.1015625), "isomp_weak": (10**7, 0.1015625)},   # per run
    "ephrati_2023/fig10": (1, 50.001525948759),     # N = 128: 32000 steps of 0.1 hbar (T = 50)
    "ephrati_2023/fig2": (1, 50.001525948759),      # the run of Figure 10
    # Gay-Balmaz & Wu: single realisations per case, dt = 0.01, T = 50 (Gay-Balmaz & Wu 2024 do not state T; >= 45, docs/papers/gay_balmaz_wu.md)
    **{f"gay_balmaz_wu/fig{n}": (1, 50) for n in (3, 4, 5, 6, 8, 10, 11, 13)},
    # The paper shows one realisation per case; the spec's statistics run 20 (case 1) or 200 paths beside it.
    **{f"gay_balmaz_wu/fig{n}": {"stochastic": (1, 50), "deterministic": (1, 50), "ensemble": (paths, 50)}
       for n, paths in ((7, 20), (9, 200), (12, 200))},
    # ... the rigid body: 2 paths shown, picked from 50 candidates (Gay-Balmaz & Wu 2024 Fig. 1); an ensemble of 20 (Fig. 2)
    "gay_balmaz_wu/fig1": {"deterministic": (1, 50), "candidates": (50, 50)},
    "gay_balmaz_wu/fig2": {"deterministic": (1, 50), "ensemble": (20, 50)},
    "gay_balmaz_wu/fig14": (1, 0.01),   # one step: the run supplies the system and integrator the map is solved with
}


@pytest.mark.slow
@pytest.mark.parametrize("exp", [e for e in ALL if f"{e.paper}/{e.figure}" in PAPER_COUNTS],
                         ids=lambda e: f"{e.paper}/{e.figure}")
def test_paper_profile_has_the_papers_counts(exp, tmp_path):
    counts = PAPER_COUNTS[f"{exp.paper}/{exp.figure}"]
    for run_id, cfg in compose_runs(exp, "paper", str(tmp_path)).items():
        paths, T = counts[run_id] if isinstance(counts, dict) else counts
        assert cfg.plan.paths == paths, run_id
        if T is not None:
            assert cfg.plan.T == T, run_id
        else:   # T = 1000 in the paper; 999.9 = 6666 x 0.15, as 1000 is not a whole number of 0.15 steps
            assert cfg.plan.T in (999.9, 1000), run_id


# --- how each experiment is named ------------------------------------------------------------------------
PAPER_NAMES = {"kraus_tyranowski_2021": "Kraus & Tyranowski (2021)", "bou_rabee_owhadi": "Bou-Rabee & Owhadi (2007)",
               "luesink_2023": "Luesink et al. (2023)", "ephrati_2023": "Ephrati et al. (2024)",
               "gay_balmaz_wu": "Gay-Balmaz & Wu (2024)"}


@pytest.mark.parametrize("exp", ALL, ids=lambda e: f"{e.paper}/{e.figure}")
def test_every_heading_cites_the_paper_and_the_papers_figure_name(exp):
    assert exp.paper_name == PAPER_NAMES[exp.paper]
    number = re.fullmatch(r"fig(\d+)(?:_(\d+))?", exp.figure)
    if number:   # fig4_1: "Figure 4.1"; fig4 (a paper numbering its figures 1, 2, ...): "Figure 4"
        name = f"Figure {number[1]}" + (f".{number[2]}" if number[2] else "")
        assert not exp.diagnostic and exp.name == name
        assert re.search(rf"{re.escape(name)}(?![\d.])", exp.source)      # the figure the paper's text names
    else:   # a check this project adds says so instead of passing for a figure
        assert exp.diagnostic and "not a figure of the paper" in exp.name
    assert exp.heading == f"{exp.paper_name}, {exp.name}: {exp.title}"
    assert exp.paper not in exp.heading and exp.figure not in exp.heading


def _variant(tmp_path, edit, source="kraus_tyranowski_2021/fig4_1.yaml", name="fig4_1.yaml"):
    spec = yaml.safe_load((EXPERIMENTS / source).read_text())
    edit(spec)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path


def test_a_figure_without_a_name_is_named_from_its_id(tmp_path):
    exp = load(_variant(tmp_path, lambda s: [s.pop("name"), s.pop("paper_name")]))
    assert exp.name == "Figure 4.1" and exp.heading.startswith("kraus_tyranowski_2021, Figure 4.1: ")


@pytest.mark.parametrize("edit, key", [
    (lambda s: s.update(name="Figure 4.2"), "name"),            # another figure's name
    (lambda s: s.update(name="Figure 4.10"), "name"),
    (lambda s: s.update(paper_name=""), "paper_name"),
    (lambda s: s["panels"][0].update(reference_label=3), "panels[0].reference_label"),
    (lambda s: s["panels"][0].update(ylim=[3, 1]), "panels[0].ylim"),
])
def test_bad_names_and_labels_are_refused_naming_the_key(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit))
    assert str(err.value).startswith(f"fig4_1.yaml:{key}=")


def test_a_paper_numbering_its_figures_1_2_names_them_from_the_id(tmp_path):
    exp = load(_variant(tmp_path, lambda s: [s.pop("name"), s.update(figure="fig4")], "luesink_2023/fig4.yaml",
                        "fig4.yaml"))
    assert exp.name == "Figure 4" and not exp.diagnostic
    with pytest.raises(ConfigError, match=r"^fig4.yaml:name="):
        load(_variant(tmp_path, lambda s: s.update(name="Figure 4.1"), "luesink_2023/fig4.yaml", "fig4.yaml"))


LUESINK = "luesink_2023/fig6.yaml"


@pytest.mark.parametrize("edit, key", [
    (lambda s: s["panels"][0].update(slopes=[1]), "panels[0].slopes"),
    (lambda s: s["panels"][0].update(exact=True), "panels[0].exact"),
    (lambda s: s["panels"][0].update(deviation="final"), "panels[0].deviation"),
    (lambda s: s["panels"][0].update(absolute="yes"), "panels[0].absolute"),
    (lambda s: s["panels"][0].update(path=-1), "panels[0].path"),
    (lambda s: s["panels"][0].update(observable=[]), "panels[0].observable"),
    (lambda s: s["checks"][0].update(path="first"), "checks[0].path"),
    (lambda s: s["checks"][0].update(reference="initial"), "checks[0].reference"),
])
def test_bad_path_panels_and_checks_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, LUESINK, "fig6.yaml"))
    assert str(err.value).startswith(f"fig6.yaml:{key}=") and "\n" not in str(err.value)


@pytest.mark.parametrize("edit, key", [
    (lambda s: s["panels"][0].update(solid=["gamma"]), "panels[0].solid"),
    (lambda s: s["panels"][0].update(ylim=[0, 1]), "panels[0].ylim"),
    (lambda s: s["panels"][0].update(path=1.5), "panels[0].path"),
    (lambda s: s["checks"][5].update(norm_of=3), "checks[5].norm_of"),
    (lambda s: s["panels"][0].update(black=["tmk_442"]), "panels[0].black"),
    (lambda s: s["panels"][0].update(symbol="x 1"), "panels[0].symbol"),
])
def test_bad_sphere_panels_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, "luesink_2023/fig1.yaml", "fig1.yaml"))
    assert str(err.value).startswith(f"fig1.yaml:{key}=") and "\n" not in str(err.value)


@pytest.mark.parametrize("edit, key", [
    (lambda s: s["panels"][0].update(at=5.0), "panels[0].at"),
    (lambda s: s["panels"][0].update(at=[0, "t = 5"]), "panels[0].at"),
    (lambda s: s["panels"][0].update(at=[0, 0]), "panels[0].at"),
    (lambda s: s["panels"][0].update(at=[]), "panels[0].at"),
    (lambda s: s["panels"][0].update(grid=[256]), "panels[0].grid"),
    (lambda s: s["panels"][0].update(grid=[0, 512]), "panels[0].grid"),
    (lambda s: s["panels"][0].update(grid=[256.0, 512]), "panels[0].grid"),
    (lambda s: s["panels"][0].update(path=-1), "panels[0].path"),
    (lambda s: s["panels"][0].update(runs=["isomp", "isomp"]), "panels[0].runs"),
    (lambda s: s["panels"][0].update(colours="by_position"), "panels[0].colours"),
    (lambda s: s["panels"][0].update(label=""), "panels[0].label"),
    (lambda s: s["checks"][0].update(quantity="vorticity"), "checks[0].quantity"),
    (lambda s: s["checks"][0].update(above=10.5), "checks[0].above"),
    (lambda s: s["checks"][0].pop("quantity"), "checks[0].quantity"),
])
def test_bad_field_panels_and_spectrum_checks_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, "ephrati_2023/fig2.yaml", "fig2.yaml"))
    assert str(err.value).startswith(f"fig2.yaml:{key}=") and "\n" not in str(err.value)


@pytest.mark.parametrize("edit, key, source", [
    (lambda s: s["panels"][0].update(at=20), "panels[0].at", "fig10"),
    (lambda s: s["panels"][0].update(at=[]), "panels[0].at", "fig10"),
    (lambda s: s["panels"][0].update(xlim=[0.0, 1.0]), "panels[0].xlim", "fig10"),
    (lambda s: s["panels"][0].update(xlim=[1.0]), "panels[0].xlim", "fig10"),
    (lambda s: s["panels"][0].update(path=-1), "panels[0].path", "fig10"),
    (lambda s: s["panels"][0].update(observable="V"), "panels[0].observable", "fig10"),
    (lambda s: s["checks"][2].update(statistic="median"), "checks[2].statistic", "fig10"),
    (lambda s: s["panels"][0].update(contours=0), "panels[0].contours", "fig1"),
    (lambda s: s["panels"][0].update(red=["ensemble"]), "panels[0].red", "fig1"),
    (lambda s: s["panels"][0]["select"].update(rule="nearest"), "panels[0].select", "fig1"),
    (lambda s: s["panels"][0]["select"].update(run="ensemble"), "panels[0].select", "fig1"),
    (lambda s: s["panels"][1]["select"].pop("orbit"), "panels[1].select", "fig1"),
    (lambda s: s["panels"][0].update(at="t = 5"), "panels[0].at", "fig1"),
    (lambda s: s["panels"][0].update(view=[18]), "panels[0].view", "fig1"),
    (lambda s: s["checks"][22].update(select="nearest"), "checks[22].select", "fig1"),
    (lambda s: s["checks"][0].update(all_paths="yes"), "checks[0].all_paths", "fig1"),
    (lambda s: s["panels"][0].update(fit="yes"), "panels[0].fit", "fig4"),
    (lambda s: s["panels"][0].update(symbol=3), "panels[0].symbol", "fig4"),
    (lambda s: s["panels"][2].update(labels=["$\\Pi_x$"]), "panels[2].labels", "fig4"),
    (lambda s: s["panels"][0].update(increments=[[0, "E", 0]]), "panels[0].increments", "fig14"),
    (lambda s: s["panels"][0].update(runs=["map", "map"]), "panels[0].runs", "fig14"),
    (lambda s: s["panels"][0].update(radius=0), "panels[0].radius", "fig14"),
    (lambda s: s["panels"][0].update(grid=[91, 181]), "panels[0].grid", "fig14"),
    (lambda s: s["checks"][0].update(statistic="median"), "checks[0].statistic", "fig14"),
    (lambda s: s["checks"][0].update(increments=[]), "checks[0].increments", "fig14"),
    (lambda s: s["checks"][2].update(at=[]), "checks[2].at", "fig2"),
    (lambda s: s["checks"][2].update(minus_at="t = 20"), "checks[2].minus_at", "fig2"),
])
def test_bad_paper_002_panels_and_checks_are_refused_in_one_line(tmp_path, edit, key, source):
    """Potential panels (Figs 3, 10, 13), sphere panels with contours and path selections (Fig. 1), solvability
    maps (Fig. 14) and spread checks (Fig. 2)."""
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, f"gay_balmaz_wu/{source}.yaml", f"{source}.yaml"))
    assert str(err.value).startswith(f"{source}.yaml:{key}=") and "\n" not in str(err.value)


def test_a_solvability_panel_on_an_integrator_without_half_step_momenta_is_refused_before_any_compute(tmp_path):
    """Figure 14's map is solved by the run's own integrator: TMK has no (A, B) of eqs. (62)."""
    common = ["system=rigid_body", "integrator=tmk", "plan.paths=1", "plan.keep_paths=1", "plan.dt=0.01", "plan.T=0.01",
              "plan.output_dt=0.01", "plan.observables=[H,C2]"]
    exp = load(_variant(tmp_path, lambda s: s.update(common=common), "gay_balmaz_wu/fig14.yaml", "fig14.yaml"))
    with pytest.raises(ConfigError, match=r"tmk has no half_step_momenta\(") as err:
        make_figure(exp, "smoke", tmp_path / "out", str(tmp_path / "runs"), log=lambda line: None)
    assert "\n" not in str(err.value) and not (tmp_path / "runs").exists()


def test_a_field_panel_or_spectrum_check_on_a_system_without_the_method_is_refused_before_any_compute(tmp_path):
    """The rigid body has neither render_field nor enstrophy_spectrum: refused before any run is computed."""
    field = {"quantity": "field", "runs": ["isomp"]}
    spectrum = {"id": "s", "kind": "spectrum_fraction", "run": "isomp", "quantity": "energy", "min": 0.5}
    for edit, what in ((lambda s: s["panels"].append(field), "render_field"),
                       (lambda s: s["checks"].append(spectrum), "enstrophy_spectrum")):
        exp = load(_variant(tmp_path, edit, "ephrati_2023/fig4.yaml", "fig4.yaml"))
        with pytest.raises(ConfigError, match=rf"has no method {what}\(") as err:
            make_figure(exp, "smoke", tmp_path / "out", str(tmp_path / "runs"), log=lambda line: None)
        assert "\n" not in str(err.value)
        assert not (tmp_path / "runs").exists()


def test_a_field_panel_draws_one_map_per_snapshot_time(tmp_path):
    """One map per listed time, each on its own colour scale symmetric about 0; a time the run did not
    store is named in its place (a ZeitlinEuler: the panel calls its render_field, sgi_run.figures.fields)."""
    import numpy as np

    from sgi_run.figures import plots
    from sgi_run.figures.results import RunData, Series
    from sgi_run.systems import zeitlin

    system = zeitlin.ZeitlinEuler(N=8, ic_lmax=3)
    x0 = np.asarray(system.initial_state(None))
    snaps = {0.0: {"X": x0[None]}, 1.0: {"X": 3 * x0[None]}}
    t = np.array([0.0, 1.0])
    data = {"isomp": RunData({"H": Series(t, np.ones(2), np.zeros(2))}, "H", system, lambda s: snaps.get(s), 1,
                             dt=0.5, snapshot_times=(0.0, 1.0))}
    exp = load(_variant(tmp_path, lambda s: s["panels"][0].update(grid=[16, 32], at=[0, 1, 2]),
                        "ephrati_2023/fig2.yaml", "fig2.yaml"))
    fig = plots.figure(exp, data, [{"label": "IsoMP", "paths": 1, "T": 1.0}], "smoke")
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert [im.get_array().shape for im in images] == [(16, 32), (16, 32)]
    for im, factor in zip(images, (1, 3)):
        low, high = im.get_clim()
        assert low == -high and high == pytest.approx(factor * np.abs(images[0].get_array()).max())
    titles = [ax.get_title() for ax in fig.axes]
    assert {"t = 0 (step 0)", "t = 1 (step 2)", "t = 2 (step 4)"} <= set(titles)
    assert any("no snapshot at t = 2" in text.get_text() for ax in fig.axes for text in ax.texts)
    plots.plt.close(fig)


@pytest.mark.parametrize("edit, key", [
    (lambda s: s["panels"][0].update(measure="iterations"), "panels[0].measure"),
    (lambda s: s["panels"][0].update(runs=["tmk_dt1"]), "panels[0].runs"),
    (lambda s: s["panels"][0].update(series=[{"label": "TMK", "runs": ["tmk_dt7"]}]), "panels[0].runs"),
    (lambda s: s["panels"][0].update(series=[{"runs": ["tmk_dt1"]}]), "panels[0].series"),
    (lambda s: s["panels"][0].update(yscale="symlog"), "panels[0].yscale"),
    (lambda s: s["panels"][0].update(slopes=[1]), "panels[0].slopes"),
    (lambda s: s["panels"][0].update(window=[0, 10]), "panels[0].window"),     # only with measure: window_mean
    (lambda s: s["panels"][0].update(measure="window_mean"), "panels[0].window"),
    (lambda s: s["panels"][0].update(measure="window_mean", window=[10, 5]), "panels[0].window"),
    (lambda s: s["checks"][2].update(statistic="mean"), "checks[2].statistic"),
])
def test_bad_scan_panels_and_solver_checks_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, "luesink_2023/sine_euler_dt_scan.yaml", "sine_euler_dt_scan.yaml"))
    assert str(err.value).startswith(f"sine_euler_dt_scan.yaml:{key}=") and "\n" not in str(err.value)


@pytest.mark.parametrize("name", [None, "Figure 6.1"])
def test_a_diagnostic_must_say_it_is_not_a_figure(tmp_path, name):
    def edit(spec):
        spec.pop("name")
        if name:
            spec["name"] = name
    path = _variant(tmp_path, edit, "bou_rabee_owhadi/svia_diagnostics.yaml", "svia_diagnostics.yaml")
    with pytest.raises(ConfigError, match=r"^svia_diagnostics.yaml:name="):
        load(path)


# --- convergence studies (runs with plan=convergence) -------------------------------------------------
ORDERS = "kraus_tyranowski_2021/order_verification.yaml"


def _with_ensemble_run(spec):
    spec["runs"]["ens"] = {"overrides": ["integrator=midpoint", "plan=default"], "label": "midpoint", "dt_source": "chosen here"}


@pytest.mark.parametrize("edit, key", [
    (lambda s: [_with_ensemble_run(s), s["panels"][0]["runs"].append("ens")], "panels[0].runs"),
    (lambda s: s["panels"].append({"quantity": "mean", "runs": ["heun"]}), "panels[2].runs"),
    (lambda s: s["panels"][0].update(slopes=[-1]), "panels[0].slopes"),
    (lambda s: s["panels"][0].update(slopes=1), "panels[0].slopes"),
    (lambda s: s["panels"][0].update(exact=True), "panels[0].exact"),
    (lambda s: s["panels"][0].update(runs=[]), "panels[0].runs"),
    (lambda s: [_with_ensemble_run(s), s["panels"].append({"quantity": "mean", "runs": ["ens"], "slopes": [1]})],
     "panels[2].slopes"),
    (lambda s: [_with_ensemble_run(s), s["checks"][0].update(runs=["ens"])], "checks[0].kind"),
    (lambda s: s["checks"].append({"id": "x", "kind": "ratio_at", "run": "heun", "min": 1}), "checks[10].kind"),
    (lambda s: s["checks"][0].update(observable="H"), "checks[0].observable"),
    (lambda s: s["checks"][2].update(dt="2^-7"), "checks[2].dt"),
    (lambda s: s["fidelity"]["smoke"]["runs"].update(heun=["plan=default"]), "runs.heun.overrides"),
])
def test_bad_convergence_panels_and_checks_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, ORDERS, "order_verification.yaml"))
    assert str(err.value).startswith(f"order_verification.yaml:{key}=") and "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.xdist_group("kraus_tyranowski_2021")   # with that paper's smoke runs (above)
def test_the_order_verification_tables_every_study_per_step_size(runs_root, tmp_path):
    """Re-uses the smoke runs above (the run cache); tables per run and step size: dt, error, SE,
    local slope, order and CI, in the .csv, the .md, the record and the gallery."""
    import csv
    import json

    from sgi_run.figures import gallery
    exp = load(EXPERIMENTS / ORDERS)
    assert exp.studies == set(exp.runs) and exp.diagnostic
    outcome = make_figure(exp, "smoke", tmp_path, runs_root, log=lambda line: None)
    rows = list(csv.DictReader(open(outcome.files["csv"])))
    assert [(r["run"], float(r["dt"])) for r in rows[:3]] == [("heun", 0.0625), ("heun", 0.03125), ("heun", 0.015625)]
    assert len(rows) == 6 * 3 + 2 * 2 and outcome.table == []
    for row in rows:
        assert {"error", "se", "local_slope", "order", "order_ci_low", "order_ci_high", "resolvable"} <= set(row)
        assert float(row["se"]) > 0 and row["paths"] in ("200", "20000")
    heun = [r for r in rows if r["run"] == "heun"]
    assert heun[0]["local_slope"] == "nan" and 0.9 < float(heun[1]["local_slope"]) < 1.2
    assert float(heun[0]["order_ci_low"]) < float(heun[0]["order"]) < float(heun[0]["order_ci_high"])
    md = outcome.files["md"].read_text()
    assert "| Heun | strong, RMS of the state (exact reference) | 0.0625 (chosen here) | " in md
    assert "| SRKw2 | weak, E(H) (exact reference) | 1 (project choice) | " in md
    record = json.loads(outcome.files["json"].read_text())
    assert record["table"] == [] and [r["dt"] for r in record["convergence"]] == [float(r["dt"]) for r in rows]
    index = gallery.build(tmp_path).read_text()
    assert "fitted order [95% CI]" in index and "Runs drawn here:</b> Heun; R2; E1;" in index


def _unconverged_figure(spec, **keys):
    """fig4_1 cut to its midpoint run, on van der Pol (nonlinear) with a tiny plan and one Newton iteration per
    solve (every step unconverged, the iterate kept), and a check it passes."""
    spec.update(common=["system=van_der_pol"], oracle=None)
    run = spec["runs"]["midpoint_dt0.1"]
    run["overrides"] += ["integrator.on_fail=count", "integrator.max_iter=1"]
    spec["runs"] = {"midpoint_dt0.1": run}
    spec["fidelity"] = {f: {"overrides": ["plan.paths=20", "plan.T=1", "plan.output_dt=0.5"]}
                        for f in ("smoke", "reduced", "paper")}
    spec["panels"] = [{"quantity": "mean", "runs": ["midpoint_dt0.1"]}]
    spec["checks"] = [{"id": "iterates", "kind": "solver_statistic", "run": "midpoint_dt0.1", "statistic": "per_step",
                       "min": 1, "criterion": "one Newton iteration per step at least"}]
    spec.update(keys)


@pytest.mark.parametrize("studied", [False, True])
def test_a_run_with_unconverged_steps_fails_its_figure_unless_the_figure_studies_them(tmp_path, studied):
    keys = {"unconverged_steps": "studied"} if studied else {}
    exp = load(_variant(tmp_path, lambda s: _unconverged_figure(s, **keys)))
    outcome = make_figure(exp, "smoke", tmp_path / "out", str(tmp_path / "runs"), log=lambda line: None)
    failed = [c.line() for c in outcome.checks if c.verdict == FAIL]
    if studied:
        assert not failed
    else:
        assert failed == ["FAIL  solves_converge [midpoint_dt0.1]: path-steps whose solve did not converge = 200 "
                          "(band <= 0; 200 of 200 path-steps did not converge (newton, max_iter=1, tol=1e-12): the "
                          "results are not a converged solution; use a smaller plan.dt or a larger integrator.max_iter)"]
    assert outcome.table[0]["unconverged_steps"] == 200 and "200 unconverged" in outcome.files["md"].read_text()


def test_the_unconverged_steps_key_is_refused_unless_fail_or_studied(tmp_path):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, lambda s: s.update(unconverged_steps="yes")))
    assert str(err.value) == "fig4_1.yaml:unconverged_steps='yes' is not allowed: fail (the default: a run whose solves " \
                             "did not all converge fails the figure) or studied (non-convergence is what the figure shows)"


@pytest.mark.parametrize("directory", ["runs=a,b", "it's here", "two words", "ends with\\"])
def test_a_runs_root_is_passed_to_hydra_as_it_is(directory, tmp_path):
    """--runs-root is a directory, whatever it holds: never read as Hydra syntax (a sweep, a second key)."""
    import sgi_run
    exp = load(EXPERIMENTS / "kraus_tyranowski_2021" / "fig4_1.yaml")
    runs_root = str(tmp_path / directory)
    overrides = exp.overrides(next(iter(exp.runs)), "smoke", runs_root)
    assert sgi_run.compose(overrides).output_root == runs_root


# --- issue 25: a figure's runs are built once -----------------------------------------------------------------
def two_runs(spec):
    """fig4_1 cut to two small runs (midpoint, DIRK) drawn in one panel, and one check."""
    spec["runs"] = {run_id: spec["runs"][run_id] for run_id in ("midpoint_dt0.1", "dirk_dt0.5")}
    spec["fidelity"] = {f: {"overrides": ["plan.paths=20", "plan.T=10"]} for f in ("smoke", "reduced", "paper")}
    spec["panels"] = [{"quantity": "mean", "runs": list(spec["runs"])}]
    spec["checks"] = [{"id": "iterates", "kind": "solver_statistic", "run": "midpoint_dt0.1", "statistic": "per_step",
                       "min": 1, "criterion": "one Newton iteration per step at least"}]


def test_each_run_of_a_figure_is_built_once(tmp_path, build_calls):
    """A figure's runs are validated once each (config.build); their runs, curves and checks use those Setups."""
    exp = load(_variant(tmp_path, two_runs))
    outcome = make_figure(exp, "smoke", tmp_path / "out", str(tmp_path / "runs"), log=lambda line: None)
    assert sorted(row["run"] for row in outcome.table) == ["dirk_dt0.5", "midpoint_dt0.1"] and len(build_calls) == 2


def test_a_profile_with_the_papers_counts_is_the_papers_figure():
    """Identical counts are not called "reduced": Figure 4.10's reduced profile is the paper's, Figure 4.1's is
    not (fewer paths)."""
    [one_path] = discover("experiments", ["fig4_10"])
    [fewer] = discover("experiments", ["fig4_1"])
    assert one_path.at_papers_counts("reduced") and one_path.at_papers_counts("paper")
    assert not fewer.at_papers_counts("reduced") and fewer.at_papers_counts("paper")


@pytest.mark.parametrize("edit, key", [
    (lambda s: s["fidelity"]["reduced"].pop("cost"), "fidelity.reduced.cost"),
    (lambda s: s["fidelity"]["smoke"].update(cost={"paths": 10, "repeats": 1}), "fidelity.smoke.cost.repeats"),
    (lambda s: s["fidelity"]["smoke"].update(cost={"paths": 0, "repeats": 2}), "fidelity.smoke.cost.paths"),
    (lambda s: s["fidelity"]["smoke"].update(cost={"paths": 10, "repeats": 2, "warmup": 1}),
     "fidelity.smoke.cost.warmup"),
    (lambda s: s["panels"][1].update(invariant=None), "panels[1].invariant"),
    (lambda s: s["checks"][1].pop("invariant"), "checks[1].invariant"),
])
def test_bad_work_precision_profiles_panels_and_checks_are_refused_in_one_line(tmp_path, edit, key):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, "gay_balmaz_wu/work_precision.yaml", "work_precision.yaml"))
    assert str(err.value).startswith(f"work_precision.yaml:{key}=") and "\n" not in str(err.value)


# --- issue 45: every key of an experiment file is checked before any compute (sgi_run/figures/schema.py) ------------
WORK_PRECISION = "gay_balmaz_wu/work_precision.yaml"


@pytest.mark.parametrize("edit, key, allowed", [
    (lambda s: s.update(titel="x"), "titel", "a key of an experiment file: ['paper', 'figure', "),
    (lambda s: s["fidelity"]["smoke"].update(foo=1), "fidelity.smoke.foo",
     "a key of a fidelity profile: ['overrides', 'runs', 'cost']"),
    (lambda s: s["fidelity"].update(fast={"overrides": []}), "fidelity.fast",
     "a key of fidelity: ['smoke', 'reduced', 'paper']"),
    (lambda s: s["runs"]["dirk_dt0.5"].update(color="blue"), "runs.dirk_dt0.5.color",
     "a key of a run: ['overrides', 'label', 'dt_source', 'colour']"),
    (lambda s: s["panels"][0].update(runz=["dirk_dt0.5"]), "panels[0].runz", "a key of a mean panel: ['quantity', "),
    (lambda s: s["panels"][1].update(yscal="log"), "panels[1].yscal", "a key of a error panel: ['quantity', "),
    (lambda s: s["checks"][2].update(maxx=1), "checks[2].maxx", "a parameter of max_abs_error: ['min', 'max', "),
])
def test_an_unknown_key_is_refused_at_every_level_naming_the_keys_it_may_be(tmp_path, edit, key, allowed):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit))
    assert str(err.value).startswith(f"fig4_1.yaml:{key}=") and f" is not allowed: {allowed}" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("edit, refusal", [
    (lambda s: s["fidelity"]["smoke"].update(cost={"paths": 10, "repeats": 2}),
     "fidelity.smoke.cost={'paths': 10, 'repeats': 2} is not allowed: nothing: a profile's cost times the runs of "
     "work_precision panels, and this figure has none"),
    (lambda s: s["checks"][5].update(min=2, max=0.5),
     "checks[5].max=0.5 is not allowed: a number >= min = 2: the band [min, max] holds no value"),
    (lambda s: s["checks"][5].update(min=float("nan")),
     "checks[5].min=nan is not allowed: a number or null (ratio_at.min)"),
    (lambda s: s.update(panels=[]), "panels=[] is not allowed: a non-empty list of panels"),
    (lambda s: s.update(window=["a", 1]), "window=['a', 1] is not allowed: null or [low, high] with low < high"),
    (lambda s: s.update(figure="../fig4_1"), "figure='../fig4_1' is not allowed: a name of letters, digits, _ . and - "
     "(it names the figure's directory and files)"),
    (lambda s: s["runs"]["dirk_dt0.5"].update(label=5), "runs.dirk_dt0.5.label=5 is not allowed: a text"),
    (lambda s: s["panels"][0].update(yscale="logarithmic"),
     "panels[0].yscale='logarithmic' is not allowed: one of ['linear', 'log', 'symlog']"),
    (lambda s: s["panels"][0].update(exact="yes"), "panels[0].exact='yes' is not allowed: true or false"),
    (lambda s: s["checks"][2].pop("id"), "checks[2].id=None is not allowed: a value (required)"),
    (lambda s: s["checks"][2].update(runs=["e1_dt0.05"]),
     "checks[2].run='dirk_dt0.5' is not allowed: a run id, or runs: a list of run ids (one of the two)"),
])
def test_a_bad_value_is_refused_at_load_in_one_line(tmp_path, edit, refusal):
    """Each of these was accepted, and failed (or crashed) only after the runs were computed, or never."""
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit))
    assert str(err.value) == f"fig4_1.yaml:{refusal}"


def test_the_timed_repeats_of_a_work_precision_figure_are_bounded(tmp_path):
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, lambda s: s["fidelity"]["smoke"]["cost"].update(repeats=10**9), WORK_PRECISION,
                      "work_precision.yaml"))
    assert str(err.value) == ("work_precision.yaml:fidelity.smoke.cost.repeats=1000000000 is not allowed: an integer "
                              "from 2 to 100: how many times each step size of each method is timed")
    assert load(_variant(tmp_path, lambda s: s["fidelity"]["smoke"]["cost"].update(repeats=100), WORK_PRECISION,
                         "work_precision.yaml")).fidelity["smoke"]["cost"] == {"paths": 20, "repeats": 100}


SELF_HOLDING = "data that does not hold itself: an alias (*name) inside the anchor (&name) it names"


@pytest.mark.parametrize("text, allowed", [
    (b"paper: x\nfigure: &f [*f]\n", SELF_HOLDING),
    (b"a: &a {b: *a}\n", SELF_HOLDING),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", "at most 100000 values once its aliases (*name) are expanded"),
    ("title: Störmer-Verlet\n".encode("latin-1"), "UTF-8 text (byte 9 is not UTF-8)"),
    (b"paper: [x\n", "valid YAML (while parsing a flow sequence)"),
    (b"a: " + b"[" * 2000 + b"]" * 2000, "valid YAML nested less deep"),
])
def test_an_unreadable_experiment_file_is_refused_in_one_line_naming_it(tmp_path, text, allowed):
    path = tmp_path / "fig1.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(err.value) == f"{path}='' is not allowed: {allowed}"


@pytest.mark.parametrize("edit, source, refusal", [
    (lambda s: s["panels"][1].update(invariant="C9"), WORK_PRECISION,
     "work_precision.yaml:panels[1].invariant='C9' is not allowed: an invariant run lgvi_cayley records: ['C2'] "
     "(plan.invariants=declared records the ones RigidBody declares: ['C2'])"),
    (lambda s: s["checks"][0].update(observable="nope"), "kraus_tyranowski_2021/fig4_1.yaml",
     "fig4_1.yaml:checks.agrees_with_method_oracle.observable='nope' is not allowed: an observable run midpoint_dt0.1 "
     "records: ['H'] (plan.observables; Kubo has ['H', 'q', 'p'])"),
    (lambda s: s.update(observable="q"), "kraus_tyranowski_2021/fig4_1.yaml",
     "fig4_1.yaml:observable='q' is not allowed: an observable run dirk_dt0.1 records: ['H'] (plan.observables; "
     "Kubo has ['H', 'q', 'p'])"),
])
def test_an_observable_or_invariant_no_run_records_is_refused_before_any_compute(tmp_path, edit, source, refusal):
    """Once refused only when the figure was drawn or judged, after every run was computed."""
    exp = load(_variant(tmp_path, edit, source, Path(source).name))
    with pytest.raises(ConfigError) as err:
        make_figure(exp, "smoke", tmp_path / "out", str(tmp_path / "runs"), log=lambda line: None)
    assert str(err.value) == refusal and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("edit, key, source", [
    (lambda s: s["checks"][0].update(kind={"ratio_at": 1}), "checks[0].kind", "kraus_tyranowski_2021/fig4_1.yaml"),
    (lambda s: s["checks"][8].update(other={"heun_dt0.01": 1}), "checks[8].other", "kraus_tyranowski_2021/fig4_1.yaml"),
    (lambda s: s["panels"][0]["series"][0].update(runs=[{"a": 1}]), "panels[0].series",
     "luesink_2023/heavy_top_iterations.yaml"),
])
def test_a_mapping_where_a_name_belongs_is_refused_in_one_line(tmp_path, edit, key, source):
    """Found by tests/figures/test_experiment_fuzz.py: each ended in a TypeError (a mapping looked up by name)."""
    name = Path(source).name
    with pytest.raises(ConfigError) as err:
        load(_variant(tmp_path, edit, source, name))
    assert str(err.value).startswith(f"{name}:{key}=") and "\n" not in str(err.value)
