"""``sgi-figures`` as a user meets it: places it cannot write are one line, before any compute."""
import pytest

from sgi_run.figures import cli


@pytest.mark.parametrize("flag", ["--runs-root", "--output"])
def test_an_unwritable_directory_is_refused_in_one_line(flag, tmp_path, capsys):
    args = ["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
            "--output", str(tmp_path / "out")]
    args[args.index(flag) + 1] = "/proc/x"
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: {flag}='/proc/x' is not allowed: a directory sgi-run can write")
    assert err.count("\n") == 1 and not list(tmp_path.rglob("ensemble.h5"))
