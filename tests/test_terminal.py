import io
import sys

from sgi_run.terminal import console


def test_a_console_into_a_pipe_never_wraps(capsys):
    """capsys's stdout is not a terminal: a long line, text or markup, comes out as one line."""
    console().print("[bold]wrote[/] " + "/a-long-directory" * 20 + "/ensemble.h5; ran on local (this process), cpu")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("wrote /a-long-directory")


def test_an_ascii_terminal_gets_the_symbols_in_ascii(monkeypatch):
    """LANG=C PYTHONIOENCODING=ascii: the summary's ± raised UnicodeEncodeError after the run was saved."""
    written = io.BytesIO()
    stdout = io.TextIOWrapper(written, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    console().print("E = 1.0 ± 0.1, Δt ≤ 0.5, ü², σ")
    stdout.flush()
    assert written.getvalue().decode("ascii") == "E = 1.0 +/- 0.1, dt <= 0.5, u2, ?\n"


def test_an_ascii_terminals_table_stays_aligned(monkeypatch):
    """± is written +/- before rich lays the table out: its columns are as wide as what is printed."""
    from rich.table import Table
    written = io.BytesIO()
    stdout = io.TextIOWrapper(written, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    table = Table("obs", "mean ± s.e.")
    table.add_row("H", "1.99831 ± 0.00034")
    console().print(table)
    stdout.flush()
    lines = written.getvalue().decode("ascii").splitlines()
    assert "1.99831 +/- 0.00034" in "".join(lines) and len({len(line) for line in lines}) == 1, lines
