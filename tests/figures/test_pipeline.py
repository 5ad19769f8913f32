"""The figure pipeline end to end at smoke fidelity: runs, PNG, table, verdicts, gallery, cache."""
import csv
import dataclasses
import html
import json
import re
from pathlib import Path

import pytest
import yaml

from sgi_run.figures import cli
from sgi_run.figures.experiment import discover, load

# One process under pytest-xdist (--dist loadgroup): the tests share one smoke run of fig4_1 (the `smoke`
# fixture), which a second process would make again.
pytestmark = pytest.mark.xdist_group("figure_pipeline")

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FIG = "kraus_tyranowski_2021"
VERDICT_LINE = re.compile(r"^(PASS|FAIL|SKIP)  \S+ \[\S+\]: ")


def test_this_module_runs_in_one_process(request):
    """Under pytest-xdist's --dist loadgroup (make test) a test's xdist_group is the suffix of its node id, and
    that is how its group's tests go to one process: pytest 9.2 drops the suffix (pytest-xdist#1386, hence
    pyproject's pin), and every process would then make the smoke run again."""
    if getattr(request.config.option, "loadgroup", False):      # set in an xdist worker of --dist loadgroup
        assert request.node.nodeid.endswith("@figure_pipeline"), request.node.nodeid


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke run of fig4_1; later tests re-use its run cache."""
    root = tmp_path_factory.mktemp("figures")
    args = ["--fidelity", "smoke", "--only", "fig4_1", "--experiments", str(EXPERIMENTS),
            "--output", str(root / "figures"), "--runs-root", str(root / "runs")]
    assert cli.main(args) == 0
    return root, args


@pytest.mark.slow
def test_smoke_writes_figure_table_verdicts_and_gallery(smoke):
    root, _ = smoke
    out = root / "figures" / FIG
    png = (out / "fig4_1.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    from PIL import Image
    with Image.open(out / "fig4_1.png") as image:     # a 256-colour palette: kept figures stay small
        assert image.mode == "P"
    rows = list(csv.DictReader(open(out / "fig4_1.csv")))
    assert [r["run"] for r in rows] == ["midpoint_dt0.1", "dirk_dt0.5", "dirk_dt0.1", "stormer_verlet_dt0.1",
                                        "e1_dt0.05", "heun_dt0.01", "r2_dt0.01"]
    assert all(r["paths"] == "200" and float(r["T"]) == 500 for r in rows)
    assert all(float(r["sem_T"]) > 0 and r["nonfinite_paths"] == "0" for r in rows)
    assert "| DIRK, Δt=0.5 | 0.5 (paper) | 200 |" in (out / "fig4_1.md").read_text()

    lines = [l for l in (out / "fig4_1_checks.md").read_text().splitlines() if VERDICT_LINE.match(l)]
    exp = load(EXPERIMENTS / FIG / "fig4_1.yaml")
    assert len(lines) == len(exp.checks) == 29
    # t=5000 checks cannot be judged on a T=500 run; the others are judged.
    assert sum(l.startswith("SKIP") for l in lines) == 7
    assert all(l.startswith("PASS") for l in lines if not l.startswith("SKIP"))

    # Titles cite the paper and its figure name, the same in the table, the verdicts, the record and the gallery.
    heading = "Kraus & Tyranowski (2021), Figure 4.1: Damped Kubo oscillator: mean energy E(H) for mean-square methods"
    assert (out / "fig4_1.md").read_text().startswith(f"# {heading}\n")
    assert (out / "fig4_1_checks.md").read_text().startswith(
        "# Kraus & Tyranowski (2021), Figure 4.1: acceptance checks (smoke fidelity)\n")
    record = json.loads((out / "fig4_1.json").read_text())
    assert record["heading"] == heading and record["diagnostic"] is False

    index = (root / "figures" / "index.html").read_text()
    assert f"<h2>{html.escape(heading)}</h2>" in index and "kraus_tyranowski_2021 fig4_1" not in index
    assert f'src="{FIG}/fig4_1.png"' in index
    assert "The stochastic DIRK method proves" in index       # the paper's caption
    assert "<b>smoke</b> fidelity" in index and "plan.paths=50000" in index


@pytest.mark.slow
def test_second_run_uses_the_run_cache(smoke, capsys):
    """The figure made from exactly these runs is kept; made again (its record gone), from the cached runs."""
    root, args = smoke
    capsys.readouterr()
    assert cli.main(args) == 0
    assert "kept: " in capsys.readouterr().out
    (root / "figures" / FIG / "fig4_1.json").unlink()
    assert cli.main(args) == 0
    record = json.loads((root / "figures" / FIG / "fig4_1.json").read_text())
    assert all(row["cached"] for row in record["table"])


@pytest.mark.slow
def test_fail_is_a_result_unless_strict(smoke, tmp_path):
    root, _ = smoke
    spec = yaml.safe_load((EXPERIMENTS / FIG / "fig4_1.yaml").read_text())
    spec["checks"] = [{"id": "too_tight", "kind": "within_factor", "run": "midpoint_dt0.1", "factor": 1.0001,
                       "criterion": "a band midpoint cannot meet"}]
    spec["paper"] = "my_study"          # a user's copy: the built-in id is taken (one file per paper/figure id)
    (tmp_path / "my_study").mkdir()
    (tmp_path / "my_study" / "fig4_1.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    args = ["--fidelity", "smoke", "--experiments", str(tmp_path), "--output", str(tmp_path / "out"),
            "--runs-root", str(root / "runs")]
    assert cli.main(args) == 0
    assert (tmp_path / "out" / "my_study" / "fig4_1_checks.md").read_text().count("FAIL  too_tight") == 1
    assert cli.main(args + ["--strict"]) == 1


def test_bad_input_is_refused_before_any_compute(tmp_path, capsys):
    assert cli.main(["--only", "fig9_9", "--experiments", str(EXPERIMENTS)]) == 2
    assert "--only='fig9_9'" in capsys.readouterr().err
    (tmp_path / "my_study").mkdir()
    text = (EXPERIMENTS / FIG / "fig4_1.yaml").read_text().replace("integrator=heun", "integrator=nope")
    (tmp_path / "my_study" / "fig4_1.yaml").write_text(text.replace(f"paper: {FIG}", "paper: my_study"))
    runs = tmp_path / "runs"
    assert cli.main(["--fidelity", "smoke", "--experiments", str(tmp_path), "--output", str(tmp_path / "out"),
                     "--runs-root", str(runs)]) == 2
    assert "integrator='nope'" in capsys.readouterr().err
    assert not runs.exists()


def test_fidelity_profiles_resolve_to_the_documented_counts():
    exp, = discover(EXPERIMENTS, ["fig4_1"])
    paper = [exp.overrides(r, "paper") for r in exp.runs]
    assert all("plan.paths=50000" in o and "plan.T=5000" in o for o in paper)
    heun = exp.overrides("heun_dt0.01", "reduced", "/tmp/x")
    assert heun.count("plan.paths=5000") == 1 and "plan.paths=10000" not in heun
    # The profile is the figure's, not the run's: a run gets its overrides and no fidelity label.
    assert heun[-1] == "output_root='/tmp/x'" and not any(o.startswith("plan.fidelity") for o in heun)


def test_table_rows_recorded_by_earlier_versions_still_render():
    """The gallery re-reads every figure's JSON record; older ones lack later columns."""
    from sgi_run.figures.tables import md_cells
    old = {"label": "DIRK", "dt": 0.5, "dt_source": "paper", "paths": 100, "mean_T": 1.0, "sem_T": 0.01,
           "exact_T": "", "ratio_T": "", "max_abs_error": "", "t_max_abs_error": "", "window_mean": 0.98,
           "window_se_bound": 0.02, "max_rel_mc_error": 0.1, "nonfinite_paths": 0, "wall_time_s": 3.0, "cached": True}
    cells = md_cells(old)
    assert "0.98 ± ≤ 0.02" in cells and cells[-1] == "3 (cached)"


def test_the_gallery_orders_figures_by_number_and_diagnostics_last():
    from sgi_run.figures.experiment import figure_order as _order     # the gallery's order
    names = ["fig4_10", "fig4_2", "fig4_1", "svia_diagnostics", "fig2_1"]
    paths = [Path("out/kraus_tyranowski_2021") / f"{n}.json" for n in names[:3]]
    paths += [Path("out/bou_rabee_owhadi") / f"{n}.json" for n in names[3:]]
    assert [p.stem for p in sorted(paths, key=_order)] == ["fig2_1", "svia_diagnostics", "fig4_1", "fig4_2", "fig4_10"]


def test_gallery_headings_of_records_written_before_figures_had_names():
    from sgi_run.figures.gallery import heading
    old = {"paper": "kraus_tyranowski_2021", "figure": "fig4_1", "title": "Kubo"}
    assert heading(old) == ("kraus_tyranowski_2021 fig4_1", "kraus_tyranowski_2021 fig4_1: Kubo")


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def test_a_record_with_a_nan_statistic_is_strict_json_and_reads_back(tmp_path):
    """NaN is no JSON: the record holds null, which every reader takes for the non-finite value it stood for."""
    import math

    from sgi_run.figures.tables import md_cells, study_md_rows
    from sgi_run.figures.records import read_record, write_record
    from sgi_run.figures.results import CheckResult
    nan = float("nan")
    row = {"label": "IM", "dt": 0.01, "dt_source": "paper", "paths": 100, "mean_T": 1.0, "sem_T": nan,
           "exact_T": "", "ratio_T": "", "max_abs_error": "", "t_max_abs_error": "", "max_rel_mc_error": nan,
           "nonfinite_paths": 100, "solver_per_step": nan, "wall_time_s": nan, "path_steps_per_s": nan,
           "cached": False}
    study = {"run": "s", "label": "S", "error_kind": "weak", "observable": "H", "reference": "exact",
             "dt_source": "paper", "dt": 0.5, "error": 1e-2, "se": 1e-4, "resolvable": True, "local_slope": nan,
             "order": nan, "order_ci_low": nan, "order_ci_high": nan, "paths": 10, "T": 1.0, "nonfinite_paths": 0,
             "wall_time_s": 2.0, "cached": False}
    check = CheckResult(id="c", kind="ratio_at", run="r", criterion="", verdict="FAIL", value=nan, se=nan,
                        t=None, band="[1, 2]", margin_se=nan, detail="", quantity="E/exact")
    path = tmp_path / "fig.json"
    write_record(path, {"table": [row], "convergence": [study], "checks": [check.as_dict()], "inf": float("inf")})
    strict = json.loads(path.read_text(), parse_constant=_refuse_constant)
    assert strict["table"][0]["sem_T"] is None and strict["checks"][0]["value"] is None and strict["inf"] is None
    record = read_record(path)
    back = CheckResult(**record["checks"][0])
    assert math.isnan(back.value) and back.measured().startswith("E/exact = nan")
    cells = md_cells(record["table"][0])
    assert cells[3] == "1 ± —" and cells[8] == "—" and cells[-1] == "—" and "nan" not in " ".join(cells)
    assert study_md_rows(record["convergence"])[0][4:6] == ["–", "none (< 2 errors resolvable)"]


def _row(paths, sem_T, **more):
    return {"run": "tmk", "label": "TMK", "integrator": "tmk", "dt": 0.01, "dt_source": "paper", "paths": paths,
            "T": 100, "mean_T": 0.125, "sem_T": sem_T, "exact_T": "", "ratio_T": "", "max_abs_error": "",
            "t_max_abs_error": "", "max_rel_mc_error": "" if paths == 1 else 0.01, "nonfinite_paths": 0,
            "wall_time_s": 3.0, "cached": False, **more}


@pytest.mark.parametrize("sem_T", ["", float("nan"), None])   # this version's, an earlier record's, read back
def test_a_single_realisation_shows_its_value_without_a_standard_error(sem_T):
    from sgi_run.figures.tables import md_cells, md_header
    cells = md_cells(_row(1, sem_T))
    assert cells[2] == "1 (single realisation)" and cells[3] == "0.125" and cells[8] == "—"
    assert md_header("C1", [_row(1, sem_T)])[3] == "C1(T)"          # one path's value, no expectation
    assert md_header("C1", [_row(1, sem_T), _row(100, 0.001)])[3] == "E(C1)(T) ± SE"
    assert md_cells(_row(100, 0.001))[3] == "0.125 ± 0.001"


def test_a_single_path_is_compared_with_its_own_start_never_with_the_ensembles_exact_mean():
    """Issue 46: Figure 4.10's DIRK path, whose H(0) is about 0.48, read "ratio 0.4961" against E(H)_exact = 1.
    Its row holds H(T)/H(0) and the largest |H(t) - H(0)|; an ensemble's row is still against the exact mean."""
    from types import SimpleNamespace

    import numpy as np

    from sgi_run.figures.experiment import RunSpec
    from sgi_run.figures.tables import markdown_table, md_cells, md_header
    from sgi_run.figures.pipeline import _table_row
    from sgi_run.figures.results import Series

    def row(paths):
        t, h = np.array([0.0, 50.0, 100.0]), np.array([0.48, 0.5, 0.47])
        curve = Series(t, h, np.full(3, 0.01), np.ones(3))
        data = SimpleNamespace(curve=lambda _: curve, solver_statistic=lambda _: float("nan"))
        cfg = SimpleNamespace(plan=SimpleNamespace(paths=paths, dt=0.05, T=100.0),
                              integrator=SimpleNamespace(name="dirk"))
        result = SimpleNamespace(ensemble=SimpleNamespace(diagnostics={"nonfinite_paths": np.zeros(3)},
                                                          attrs={"wall_time_s": 1.0, "path_steps": 2000}),
                                 cached=False, stale=False)
        return _table_row(SimpleNamespace(window=None, drift=()), RunSpec("dirk", (), "DIRK", "chosen here"), cfg, result, data)

    one, many = row(1), row(1000)
    assert one["exact_T"] == one["ratio_T"] == ""                      # nothing divided by the ensemble's E(H)
    assert one["ratio_to_start"] == pytest.approx(0.47 / 0.48) and one["max_abs_change"] == pytest.approx(0.02)
    assert one["t_max_abs_change"] == 50.0
    assert md_header("H", [one])[4:7] == ["H(0)", "H(T) / H(0)", "max_t abs(H(t) - H(0)) (at t)"]
    for header in (md_header("H", [one]), md_header("H", [one, many])):     # a "|" in a cell does not split it
        assert len(re.split(r"(?<!\\)\|", markdown_table(header, [])[0])) == len(header) + 2
    assert md_cells(one)[4:7] == ["0.48", "0.9792", "0.02 (50)"]
    assert many["ratio_T"] == pytest.approx(0.47) and md_cells(many)[5] == "0.47"
    # A table of both says what a single path's comparison columns hold.
    assert md_header("H", [one, many])[5] == "ratio; 1 path: to its value at t = 0"
    # A record written before this held the division by the exact mean: shown empty, not as a ratio.
    assert md_cells({**one, "ratio_T": 0.4961, "ratio_to_start": ""} | {"start_value": ""})[4:6] == ["", ""]


@pytest.mark.parametrize("figure, header", [("luesink_2023/fig4", "C1(T)"), ("luesink_2023/fig6", "C1(T)"),
                                            ("kraus_tyranowski_2021/fig4_8", "E(H)(T) ± SE"),
                                            ("bou_rabee_owhadi/fig2_1", "2 E(H)(T) ± SE")])
def test_the_table_names_the_observable_it_tabulates(figure, header, tmp_path):
    """The table's value column is the experiment's observable (``_table_row`` reads its default curve), and
    a single realisation's CSV leaves its SE empty."""
    from sgi_run.figures.tables import write_table
    from sgi_run.figures.records import figure_files
    exp = load(EXPERIMENTS / f"{figure}.yaml")
    files = figure_files(exp, tmp_path)
    files["md"].parent.mkdir(parents=True)
    single = "±" not in header
    write_table(exp, "smoke", [_row(1, "") if single else _row(100, 0.001)], files)
    text = files["md"].read_text()
    assert f"| {header} |" in text and "E(T)" not in text.replace(header, "")
    assert ("Every run is a single realisation (1 path)" in text) == single
    assert next(csv.DictReader(open(files["csv"])))["sem_T"] == ("" if single else "0.001")


def test_the_table_file_says_where_the_figure_disagrees_with_its_paper(tmp_path):
    """A disagreement entry opens the figure's markdown table file: the claim quoted, the named check's computed
    value with its SE and verdict, and the explanation."""
    from sgi_run.figures.tables import write_table
    from sgi_run.figures.records import figure_files
    from sgi_run.figures.results import CheckResult
    exp = load(EXPERIMENTS / "bou_rabee_owhadi" / "fig2_2.yaml")
    exp = dataclasses.replace(exp, disagreements=({"claim": "performs successfully", "where": "Figure 2.2 caption",
                                                   "checks": ["low"], "finding": "16% low", "explanation": "why"},))
    files = figure_files(exp, tmp_path)
    files["md"].parent.mkdir(parents=True)
    low = CheckResult(id="low", kind="window_relative_deviation", run="csvia_c10", criterion="", verdict="PASS",
                      value=-0.1613, se=0.0005, t=None, band="[-0.2, -0.1]", margin_se=None, detail="",
                      quantity="(window mean - reference) / |reference|")
    write_table(exp, "smoke", [_row(100, 0.001)], files, verdicts=[low])
    text = files["md"].read_text()
    assert text.index("## Where this figure disagrees with the paper") < text.index("| run |")
    assert "**The paper** (Figure 2.2 caption): “performs successfully”" in text
    assert "PASS `low` [csvia_c10]: (window mean - reference) / |reference| = -0.1613 ± 0.0005" in text


def test_checks_that_hold_by_construction_are_listed_and_counted_apart(tmp_path):
    from sgi_run.figures.tables import write_checks
    from sgi_run.figures.results import CheckResult
    exp = load(EXPERIMENTS / "gay_balmaz_wu" / "fig1.yaml")
    common = dict(kind="path_extent", run="candidates", value=0.1, se=None, t=3.0, band="<= 0.25", margin_se=None,
                  detail="", quantity="min_t x")
    verdicts = [CheckResult(id="judged", criterion="a real one", verdict="PASS", **common),
                CheckResult(id="picked_then_checked", criterion="selected so", verdict="PASS", by_construction=True,
                            **common)]
    write_checks(exp, "smoke", verdicts, tmp_path / "checks.md")
    text = (tmp_path / "checks.md").read_text()
    counts, apart = text.index("1 PASS, 0 FAIL, 0 SKIP; 1 by construction"), text.index("## By construction")
    assert counts < text.index("PASS  judged") < apart < text.index("PASS  picked_then_checked")
    assert "- picked_then_checked [candidates]: selected so (by construction)" in text


# --- issue 45: a figure's files are written whole and its record tells when they changed ------------------------
def _written_figure(directory: Path, png: bytes = b"\x89PNG the figure") -> dict[str, Path]:
    """A figure's files as make_figure writes them (staged, sealed), without computing a figure."""
    from sgi_run.figures.records import seal, staged, write_record
    files = {key: directory / "my_study" / f"fig1{end}" for key, end in (("png", ".png"), ("md", ".md"),
                                                                          ("json", ".json"))}
    with staged(files) as stage:
        stage["png"].write_bytes(png)
        stage["md"].write_text("| run |\n")
        write_record(stage["json"], seal({"paper": "my_study", "figure": "fig1", "verdict": "PASS",
                                          "files": {key: path.name for key, path in files.items()}}, stage))
    return files


def test_a_write_that_fails_leaves_the_old_files_whole_and_no_partial_one(tmp_path):
    """A full disk while a figure's files are replaced: none of them is replaced, nothing half-written is left,
    and the error names the file the user knows (not its temporary copy)."""
    import errno

    from sgi_run.figures.records import staged
    files = _written_figure(tmp_path)
    before = {key: path.read_bytes() for key, path in files.items()}
    with pytest.raises(OSError) as failed:
        with staged(files) as stage:
            stage["png"].write_bytes(b"\x89PNG the new figure")
            with open(stage["md"], "wb") as md:
                md.write(b"| run | half")
                raise OSError(errno.ENOSPC, "No space left on device", str(stage["md"]))
    assert failed.value.filename == str(files["md"])
    assert {key: path.read_bytes() for key, path in files.items()} == before
    assert sorted(p.name for p in files["json"].parent.iterdir()) == ["fig1.json", "fig1.md", "fig1.png"]


@pytest.mark.parametrize("damage, fault", [
    (lambda files: files["png"].write_bytes(files["png"].read_bytes()[:5]),
     "fig1.png is not the file its record was written with (its sha256 differs)"),
    (lambda files: files["md"].unlink(), "fig1.md is missing"),
    (lambda files: files["json"].write_text(files["json"].read_text().replace('"PASS"', '"FAIL"')),
     "fig1.json was changed after sgi-figures wrote it (its digest does not match)"),
    (lambda files: files["json"].write_text(re.sub(r',\s*"record_digest": "\w+"', "", files["json"].read_text())),
     "fig1.json keeps no digests of its files (an earlier sgi-figures wrote it)"),
], ids=["a_file_cut_short", "a_file_missing", "a_verdict_edited", "no_digests"])
def test_a_figures_record_tells_when_its_files_are_not_as_written(damage, fault, tmp_path):
    from sgi_run.figures.records import figure_fault, files_in, read_record
    files = _written_figure(tmp_path)
    directory = files["json"].parent
    assert figure_fault(read_record(files["json"]), files_in(directory), directory) is None
    damage(files)
    assert figure_fault(read_record(files["json"]), files_in(directory), directory) == f"{directory}/{fault}"


def test_a_drift_column_is_the_largest_departure_along_the_kept_path_and_is_tabled(tmp_path):
    """An experiment's ``drift`` adds a column per entry to its table: max_t |x(t) - x(0)| along the run's kept path
    0 (divided by |x(0)| when relative), a non-finite value the largest there is; blank where the run does not
    record the observable. Luesink et al.'s Figure 4 declares its Casimir's."""
    import numpy as np

    from sgi_run.figures.pipeline import _drifts
    from sgi_run.figures.tables import md_cells, md_header, write_table
    from sgi_run.figures.records import figure_files
    from sgi_run.figures.results import RunData, Series

    t = np.arange(4.0)
    kept = lambda x: Series(t, np.asarray(x), np.zeros(4), kept=np.asarray([x]))
    exp = load(EXPERIMENTS / "luesink_2023" / "fig4.yaml")
    assert exp.drift == (("C1", False),)
    data = RunData({"C1": kept([2.0, 2.5, 1.0, 2.0]), "C2": kept([2.0, 2.0, np.nan, 2.0])}, "C1")
    assert _drifts(exp, data) == {"drift_C1": 1.0}
    relative = dataclasses.replace(exp, drift=(("C1", True), ("C2", True), ("H", False)))
    assert _drifts(relative, data) == {"relative_drift_C1": 0.5, "relative_drift_C2": float("inf"), "drift_H": ""}

    row = _row(1, "", drift_C1=2.79e-8)
    assert md_header("C1", [row])[-1] == "largest drift of C1" and md_cells(row)[-1] == "2.79e-08"
    files = figure_files(exp, tmp_path)
    files["md"].parent.mkdir(parents=True)
    write_table(exp, "smoke", [row], files)
    assert "| largest drift of C1 |" in files["md"].read_text() and "max_t |C1(t) - C1(0)|" in files["md"].read_text()
    assert float(next(csv.DictReader(open(files["csv"])))["drift_C1"]) == 2.79e-8


def test_a_run_whose_paths_all_failed_says_so_instead_of_nan():
    """Every path non-finite: the value cell names what happened, no cell is "nan" or "— ± —"."""
    from sgi_run.figures.tables import md_cells
    cells = md_cells(_row(160000, None, mean_T=None, nonfinite_paths=160000, max_rel_mc_error=None,
                          window_mean=None, window_se=None, window_se_exact=True))
    assert cells[3] == "all 160000 paths non-finite" and cells[7] == "—" and cells[8] == "—"
    assert "nan" not in " ".join(cells) and "— ± —" not in " ".join(cells)


@pytest.mark.parametrize("changes, shown", [({}, "0.01"), ({"mean_sign_changes": True}, "E crosses 0"),
                                            ({"max_rel_mc_error": 0.8}, "E within 2 SE of 0"),
                                            ({"max_rel_mc_error": 0.8, "mean_sign_changes": False}, "E within 2 SE of 0")])
def test_the_relative_se_is_shown_only_where_the_mean_stays_away_from_0(changes, shown):
    """SE/|E| has no meaning where E crosses 0 or comes within 2 SE of it (SE/|E| > 1/2 somewhere)."""
    from sgi_run.figures.tables import markdown_table, md_cells, md_header
    assert md_header("H", [_row(100, 0.001)])[8] == "max_t SE/|E|"
    cells = re.split(r"(?<!\\)\|", markdown_table(md_header("H", [_row(100, 0.001)]), [])[0])[1:-1]
    assert len(cells) == 12 and cells[8] == r" max_t SE/\|E\| "      # its "|" escaped: one cell
    assert md_cells(_row(100, 0.001, **changes))[8] == shown


def test_a_mean_that_takes_both_signs_crosses_0_and_a_start_at_0_does_not():
    from sgi_run.figures.pipeline import sign_changes
    assert sign_changes([-2.0, -0.5, 0.3, 1.4]) and not sign_changes([0.0, 0.2, 1.4, float("nan")])
