"""The gallery of an output directory: built from the figure records found there."""
import json
import shutil

from sgi_run.figures import gallery
from tests.conftest import ROOT


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
    assert f"plateau_csvia_c30 [csvia_c30]: {value:.4g} ± " in shown
