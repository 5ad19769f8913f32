from sgi_run import markdown


def test_a_table_has_its_header_rule_and_rows_with_bars_escaped():
    assert markdown.table(["E", "SE/|E|"], [[1.5, "a|b"]]) == [
        "| E | SE/\\|E\\| |", "|---|---|", "| 1.5 | a\\|b |"]


def test_cells_written_by_the_caller_are_kept_as_given():
    assert markdown.table(["x"], [["`a|b`"]], str)[2] == "| `a|b` |"
