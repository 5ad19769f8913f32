"""The gallery of an output directory: built from the figure records found there."""
import json
import re
import shutil

import pytest

from sgi_run.figures import gallery
from sgi_run.figures.experiment import discover
from sgi_run.figures.records import experiment_digest
from sgi_run.figures.tables import table_parts
from sgi_run.provenance import code_digest
from tests.conftest import ROOT, made_by_todays_code


def test_a_json_file_that_is_no_figure_record_is_left_out(tmp_path):
    """A file of one's own beside the figures (no JSON, or JSON that is no object) is no figure: not listed, and the
    gallery is still built."""
    (tmp_path / "my_study").mkdir()
    (tmp_path / "my_study" / "notes.json").write_text("{not json")
    (tmp_path / "my_study" / "list.json").write_text("[1, 2]")
    assert gallery.records(tmp_path) == []
    assert "No figures yet" in gallery.build(tmp_path).read_text()


def test_a_figures_disagreement_with_its_paper_is_shown_with_the_computed_value(tmp_path):
    source = ROOT / "gallery" / "paper" / "bou_rabee_owhadi"
    shutil.copytree(source, tmp_path / "bou_rabee_owhadi", ignore=shutil.ignore_patterns("fig2_1*"))
    path = tmp_path / "bou_rabee_owhadi" / "fig2_2.json"
    record = json.loads(path.read_text())
    record["disagreements"] = [{"claim": "performs successfully for every friction factor tested.",
                                "where": "Figure 2.2 caption", "checks": ["plateau_csvia_c30"],
                                "finding": "29% low at c = 30", "explanation": "unexplained"}]
    path.write_text(json.dumps(record))
    page = gallery.build(tmp_path).read_text()
    shown = page[page.index("Where this figure disagrees with the paper"):]
    assert "“performs successfully for every friction factor tested.”" in shown
    value = next(c for c in record["checks"] if c["id"] == "plateau_csvia_c30")["value"]
    # The check's computed value (after its quantity's name, where the record keeps one) with its SE.
    assert re.search(rf"plateau_csvia_c30 \[csvia_c30\]: [^<:]*?{re.escape(f'{value:.4g}')} ± ", shown)


def test_a_wide_table_loses_its_empty_columns_and_splits_into_two_readable_ones():
    header = ["run", "a", "empty", "b", "c", "d", "e", "f", "g", "h"]
    cells = [["r1", "1", "", "2", "3", "4", "5", "6", "7", "8"], ["r2", "1", "", "2", "3", "4", "5", "6", "7", "8"]]
    assert table_parts(header[:5], [row[:5] for row in cells]) == [(["run", "a", "b", "c"],
                                                                            [["r1", "1", "2", "3"], ["r2", "1", "2", "3"]])]
    first, second = table_parts(header, cells, at=6)
    assert first[0] == ["run", "a", "b", "c", "d"] and second[0] == ["run", "e", "f", "g", "h"]
    assert second[1][1] == ["r2", "5", "6", "7", "8"]


def test_a_caption_in_the_index_has_no_tex_left():
    text = gallery.tex_text(r"$\nu = 0.01$, $D = \sqrt{2}$, $E_0$, $H^{erg} \approx 0.47$, $\mathrm{d}W$, x < y")
    assert text == "ν = 0.01, D = √2, E<sub>0</sub>, H<sup>erg</sup> ≈ 0.47, dW, x &lt; y"


@pytest.fixture(scope="module")
def experiments():
    return {(e.paper, e.figure): e for e in discover(ROOT / "experiments")}


def test_a_figure_not_computed_needs_a_gpu_only_when_its_paper_counts_are_large(experiments):
    big = gallery.status(None, experiments[("kraus_tyranowski_2021", "fig4_11")])[0]
    assert big.startswith("needs a GPU: not computed (1.1e+13 path-steps")
    small = gallery.status(None, experiments[("luesink_2023", "fig4")])[0]
    assert "GPU" not in small and small.startswith("not computed")


def _copy(paper, figure, target, current: bool, exp):
    """A kept figure's files in ``target``, its record made current (today's experiment file, numerics code,
    committed) or left as it was with another experiment digest."""
    (target / paper).mkdir(parents=True, exist_ok=True)
    record = json.loads((ROOT / "gallery/paper" / paper / f"{figure}.json").read_text())
    for name in record["files"].values():
        shutil.copy(ROOT / "gallery/paper" / paper / name, target / paper / name)
    made = {**record["provenance"], "numerics_code": code_digest(), "uncommitted_changes": False}
    record.update(experiment_digest=experiment_digest(exp) if current else "0" * 64,
                  provenance=made if current else record["provenance"],
                  run_code=made_by_todays_code(record["run_code"]) if current else record["run_code"])
    (target / paper / f"{figure}.json").write_text(json.dumps(record))


def test_the_index_lists_every_figure_in_order_marks_stale_records_and_loads_images_lazily(tmp_path, experiments):
    _copy("luesink_2023", "fig4", tmp_path, True, experiments[("luesink_2023", "fig4")])
    _copy("luesink_2023", "fig5", tmp_path, False, experiments[("luesink_2023", "fig5")])
    page = gallery.build(tmp_path, list(experiments.values())).read_text()
    readme = (tmp_path / "README.md").read_text()
    figures = [e for e in experiments.values() if not e.diagnostic]
    for exp in figures:         # every figure of the papers, those without a record too
        assert f'id="{exp.paper}-{exp.figure}"' in page and exp.label in readme, exp.figure
    shown = re.findall(r'<section id="([a-z_0-9]+)-(fig[0-9_]+)">', page)
    assert shown == sorted(shown, key=lambda k: gallery.figure_order(gallery.Path(k[0]) / k[1]))
    assert shown.index(("kraus_tyranowski_2021", "fig4_2")) < shown.index(("kraus_tyranowski_2021", "fig4_10"))
    rows = {line.split(" | ")[0]: line for line in readme.splitlines() if line.startswith("| [") or "Figure" in line}
    fig4 = next(line for key, line in rows.items() if "Luesink et al. (2023), Figure 4]" in key)
    fig5 = next(line for key, line in rows.items() if "Luesink et al. (2023), Figure 5]" in key)
    assert "| current |" in fig4 and "stale: its experiment file was changed after it was drawn" in fig5
    sections = dict(re.findall(r'<section id="(luesink_2023-fig[45])">(.*?)</section>', page, re.S))
    assert "Stale record" in sections["luesink_2023-fig5"] and "Stale record" not in sections["luesink_2023-fig4"]
    assert page.count('loading="lazy"') == 2 and "$" not in page and "<details>" in page
    gpu = next(line for line in readme.splitlines() if "Kraus & Tyranowski (2021), Figure 4.11 |" in line)
    assert "needs a GPU" in gpu
