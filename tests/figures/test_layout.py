"""An experiment file's layout and curve styles (sgi_run/figures/layout.py): refused in one line before anything is
drawn, and every figure that compares runs in a panel tells them apart without colour (grey print)."""
import numpy as np
import pytest
import yaml

from sgi_run.core.errors import ConfigError
from sgi_run.figures import plots
from sgi_run.figures.experiment import discover, load
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.layout import PALETTE, Layout, letter, parse_layout
from sgi_run.figures.panels.path import pairs
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.results import RunData, Series
from tests.conftest import ROOT

EXPERIMENTS = ROOT / "experiments"


def test_a_layout_reads_its_grid_legend_and_letters():
    layout = parse_layout({"columns": 2, "legend": "shared", "letters": True}, "layout", 3)
    assert layout == Layout(2, "shared", True) and layout.grid(3) == (2, 2) and Layout().grid(3) == (3, 1)
    assert parse_layout(None, "layout", 1) == Layout() and letter(0) == "(a)" and letter(3) == "(d)"


@pytest.mark.parametrize("edit, key", [
    (lambda s: s.update(layout={"columns": 5}), "layout.columns"),
    (lambda s: s.update(layout={"columns": 0}), "layout.columns"),
    (lambda s: s.update(layout={"columns": True}), "layout.columns"),
    (lambda s: s.update(layout={"legend": "below"}), "layout.legend"),
    (lambda s: s.update(layout={"letters": "yes"}), "layout.letters"),
    (lambda s: s.update(layout={"rows": 2}), "layout.rows"),
    (lambda s: s.update(layout="2x1"), "layout"),
    (lambda s: s["runs"]["body_stochastic"].update(colour="teal"), "runs.body_stochastic.colour"),
])
def test_an_experiment_file_with_a_bad_layout_or_colour_is_refused_at_load(tmp_path, edit, key):
    spec = yaml.safe_load((EXPERIMENTS / "ephrati_2023/fig1.yaml").read_text())
    edit(spec)
    (tmp_path / "fig1.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    with pytest.raises(ConfigError) as err:
        load(tmp_path / "fig1.yaml")
    assert str(err.value).startswith(f"fig1.yaml:{key}=") and "\n" not in str(err.value)


def test_a_run_keeps_the_colour_its_caption_names():
    """Ephrati et al.'s Figure 1: "the stochastic equations (blue)"."""
    [exp] = discover(EXPERIMENTS, ["ephrati_2023/fig1"])
    assert plots.run_styles(exp)["body_stochastic"].colour == PALETTE["blue"]


@pytest.mark.parametrize("exp", discover(EXPERIMENTS), ids=lambda e: f"{e.paper}/{e.figure}")
def test_runs_compared_in_a_panel_differ_in_line_style_or_marker_not_only_in_colour(exp):
    styles = plots.run_styles(exp)
    for panel in exp.panels:
        if PANEL_KINDS[panel["quantity"]].runs_from:    # a scan's runs are the points of its series' curves
            continue
        looks = [(styles[r].linestyle, styles[r].marker) for r in panel.get("runs", [])]
        assert len(set(looks)) == len(looks), f"{exp.paper}/{exp.figure}: {panel.get('runs')}"


@pytest.mark.parametrize("name, text", [
    ("lambda3", r"$\lambda_{3}$"), ("pi", r"$\pi$"), ("C1", "$C_{1}$"), ("E_prime", "$E'$"), ("pi_x", r"$\pi_{x}$"),
    ("H", "$H$"), ("spectrum", "spectrum"), ("two_H", "two_H"), ("p_psi", r"$p_{\psi}$"), ("C2_1", "$C_{2,1}$"),
    ("sin4pix", "sin4pix"), ("v_sq", "v_sq"),
])
def test_observables_are_named_as_the_papers_write_them(name, text):
    assert symbol(name) == text


def _path(values: dict) -> RunData:
    t = np.arange(3.0)
    return RunData({k: Series(t, np.asarray(v, float), np.full(3, np.nan), None, kept=np.asarray(v, float)[None])
                    for k, v in values.items()}, next(iter(values)), None, lambda at: None, 1, np.zeros(3, int))


def test_eigenvalues_that_are_each_others_negatives_are_one_curve():
    """The spectrum of i X, X real antisymmetric: -a, 0, a; only the ± pair is one curve, one legend entry."""
    run = _path({"lambda1": [-2.0, -2.0, -2.0 + 1e-15], "lambda2": [0.0, 1e-16, 0.0], "lambda3": [2.0, 2.0, 2.0],
                 "H": [-2.0, 1.0, 0.0]})
    assert pairs(["lambda1", "lambda2", "lambda3", "H"], run, 0) == [["lambda1", "lambda3"], ["lambda2"], ["H"]]
    assert pairs(["lambda1", "H"], _path({"lambda1": [2.0, 2.0, 2.0], "H": [-2.0, 0, 0]}), 0) == [["lambda1"], ["H"]]


@pytest.mark.parametrize("exp", discover(EXPERIMENTS), ids=lambda e: f"{e.paper}/{e.figure}")
def test_every_title_label_and_axis_text_of_an_experiment_is_valid_mathtext(exp):
    """A formula ($...$) that matplotlib cannot parse would fail the figure when it is drawn, after its runs."""
    from matplotlib.mathtext import MathTextParser

    parser = MathTextParser("path")
    texts = [exp.title] + [run.label for run in exp.runs.values()]
    texts += [panel.get(key) for panel in exp.panels for key in ("title", "ylabel", "reference_label", "density_label")]
    for text in filter(None, texts):
        assert text.count("$") % 2 == 0, text
        for formula in text.split("$")[1::2]:
            parser.parse(f"${formula}$")


def test_the_first_eight_styles_stay_apart_when_printed_in_grey():
    """Each style's legend sample (a short line with its markers) rendered, converted to grey as a printer would, and
    compared pixel by pixel: every pair differs in a visible share of its pixels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sgi_run.figures.layout import MARKERS, style

    def grey_sample(n: int) -> np.ndarray:
        fig, ax = plt.subplots(figsize=(1.6, 0.4), dpi=100)
        ax.plot(np.linspace(0, 1, 61), np.zeros(61), lw=1.2, **style(n).line(61))
        ax.set_axis_off()
        fig.canvas.draw()
        rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
        plt.close(fig)
        return rgb @ np.array([0.299, 0.587, 0.114])     # the luma a grey printer keeps

    samples = [grey_sample(n) for n in range(len(MARKERS))]
    for i in range(len(samples)):
        for j in range(i):
            differ = np.mean(np.abs(samples[i] - samples[j]) > 0.25)
            assert differ > 0.01, f"styles {i} and {j} look alike in grey ({differ:.3%} of pixels differ)"
