from sgi_run.terminal import console


def test_a_console_into_a_pipe_never_wraps(capsys):
    """capsys's stdout is not a terminal: a long line, text or markup, comes out as one line."""
    console().print("[bold]wrote[/] " + "/a-long-directory" * 20 + "/ensemble.h5; ran on local (this process), cpu")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("wrote /a-long-directory")
