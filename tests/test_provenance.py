"""The code digest: which sources make a run's numbers (a cached run computed by other numerics is stale)."""
import inspect
import shutil
from pathlib import Path

import pytest

from sgi_run import provenance


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of the package that the digest reads instead (the cached digest cleared before and after)."""
    copy = tmp_path / "sgi_run"
    shutil.copytree(provenance.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "PACKAGE", copy)
    provenance.code_digest.cache_clear()
    yield copy
    provenance.code_digest.cache_clear()


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")


def test_changing_how_a_figure_renders_a_state_leaves_cached_runs_fresh(package_copy):
    """Zeitlin's rendering, spectra and quflow coefficients compute no run's numbers: an edit of their module
    keeps the digest; an edit of the system's own module changes it."""
    from sgi_run.figures.fields import zeitlin as figure_helpers

    before = provenance.code_digest()
    for helper in (figure_helpers.render, figure_helpers.spectra, figure_helpers.coefficients_quflow,
                   figure_helpers.render_field, figure_helpers.enstrophy_spectrum):
        source = Path(inspect.getsourcefile(helper)).resolve().relative_to(Path(provenance.__file__).resolve().parent)
        assert source.parts[0] not in provenance.NUMERICS_LAYERS
        _edit(package_copy / source)
    provenance.code_digest.cache_clear()
    assert provenance.code_digest() == before
    _edit(package_copy / "systems" / "zeitlin.py")
    provenance.code_digest.cache_clear()
    assert provenance.code_digest() != before


def test_the_commit_a_shipped_copy_names_wins_over_its_own_git(monkeypatch):
    """A remote machine's copy may carry a .git of another commit: SGI_RUN_COMMIT, where set, is the commit."""
    monkeypatch.delenv(provenance.COMMIT_VARIABLE, raising=False)
    here = provenance.source_commit()
    assert here["commit"] is None or len(here["commit"]) == 40
    monkeypatch.setenv(provenance.COMMIT_VARIABLE, "a" * 40)
    assert provenance.source_commit() == {"commit": "a" * 40, "uncommitted_changes": None}
    assert provenance.commit_text(provenance.source_commit()).startswith("sgi-run commit aaaaaaaaaaaa (a shipped copy")
