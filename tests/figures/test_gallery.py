"""The gallery of an output directory: built from the figure records found there."""
from sgi_run.figures import gallery


def test_a_json_file_that_is_no_figure_record_is_left_out(tmp_path):
    """A file of one's own beside the figures (no JSON, or JSON that is no object) is no figure: not listed, and the
    gallery is still built."""
    (tmp_path / "my_study").mkdir()
    (tmp_path / "my_study" / "notes.json").write_text("{not json")
    (tmp_path / "my_study" / "list.json").write_text("[1, 2]")
    assert gallery.records(tmp_path) == []
    assert "No figures yet" in gallery.build(tmp_path).read_text()
