"""The code digest: which sources make a run's numbers (a cached run computed by other numerics is stale)."""
import ast
import inspect
import shutil
from pathlib import Path

import pytest

from sgi_run import integrators, provenance, systems


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of the package that the digest reads instead (the cached digest cleared before and after)."""
    copy = tmp_path / "sgi_run"
    shutil.copytree(provenance.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "PACKAGE", copy)
    provenance.cache_clear()
    yield copy
    provenance.cache_clear()


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")


def _edit_code(path: Path) -> None:
    path.write_text(path.read_text() + "\nEDITED = 1\n")
    provenance.cache_clear()


def _run_of(system: str, family: str = "explicit_srk") -> tuple[type, ...]:
    return (systems.SYSTEMS[system], *integrators.FAMILIES[family])


RUNS = {"kubo": _run_of("kubo"), "zeitlin": _run_of("zeitlin_euler"), "heavy_top": _run_of("heavy_top", "lda_prk"),
        "custom": _run_of("custom", "lda_prk")}


def _digests() -> dict[str, str]:
    return {"all": provenance.code_digest()} | {name: provenance.code_digest(*run) for name, run in RUNS.items()}


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
    provenance.cache_clear()
    assert provenance.code_digest() == before
    _edit_code(package_copy / "systems" / "zeitlin.py")
    assert provenance.code_digest() != before


def test_the_commit_a_shipped_copy_names_wins_over_its_own_git(monkeypatch):
    """A remote machine's copy may carry a .git of another commit: SGI_RUN_COMMIT, where set, is the commit."""
    monkeypatch.delenv(provenance.COMMIT_VARIABLE, raising=False)
    here = provenance.source_commit()
    assert here["commit"] is None or len(here["commit"]) == 40
    monkeypatch.setenv(provenance.COMMIT_VARIABLE, "a" * 40)
    assert provenance.source_commit() == {"commit": "a" * 40, "uncommitted_changes": None}
    assert provenance.commit_text(provenance.source_commit()).startswith("sgi-run commit aaaaaaaaaaaa (a shipped copy")


def test_comments_docstrings_and_layout_change_no_digest(package_copy):
    before = _digests()
    kubo = package_copy / "systems" / "kubo.py"
    text = kubo.read_text()
    assert text.startswith('r"""')
    kubo.write_text('r"""An edited docstring.\n\n' + text[4:].replace("\n\n\n", "\n\n\n\n") + "\n# a comment\n")
    _edit(package_copy / "engine" / "simulate.py")
    provenance.cache_clear()
    assert _digests() == before


def test_a_code_edit_in_a_systems_module_marks_its_runs_alone(package_copy):
    before = _digests()
    _edit_code(package_copy / "systems" / "kubo.py")
    after = _digests()
    assert {name for name in before if after[name] != before[name]} == {"all", "kubo"}


def test_an_edit_of_what_a_systems_module_imports_marks_its_runs(package_copy):
    """heavy_top imports systems/attitude.py: an edit there is heavy_top's, not kubo's."""
    before = _digests()
    _edit_code(package_copy / "systems" / "attitude.py")
    after = _digests()
    assert {name for name in before if after[name] != before[name]} == {"all", "heavy_top"}


@pytest.mark.parametrize("shared", ["engine/simulate.py", "core/noise.py", "systems/__init__.py",
                                    "integrators/__init__.py"])
def test_an_edit_of_the_shared_code_or_a_registry_marks_every_run(package_copy, shared):
    before = _digests()
    _edit_code(package_copy / shared)
    after = _digests()
    assert all(after[name] != before[name] for name in before)


def test_an_integrators_edit_marks_the_runs_of_that_integrator(package_copy):
    before = _digests()
    _edit_code(package_copy / "integrators" / "lda_prk.py")
    after = _digests()
    assert {name for name in before if after[name] != before[name]} == {"all", "heavy_top", "custom"}


def test_a_new_system_module_changes_no_runs_digest(package_copy):
    before = _digests()
    (package_copy / "systems" / "new_system.py").write_text("from sgi_run.systems.canonical import CanonicalSystem\n")
    provenance.cache_clear()
    after = _digests()
    assert {name for name in before if after[name] != before[name]} == {"all"}


@pytest.mark.parametrize("importing", ["import importlib\n\ndef f():\n    importlib.import_module('sgi_run.systems.zeitlin')\n",
                                       "def f():\n    from sgi_run.systems import zeitlin\n",
                                       "def f():\n    from . import zeitlin\n",
                                       "TARGET = {'_target_': 'sgi_run.systems.zeitlin.ZeitlinEuler'}\n"])
def test_lazy_and_dynamic_imports_are_followed(package_copy, importing):
    """An import inside a function, a relative one, or a module named in a string (importlib, a ``_target_``)."""
    kubo = package_copy / "systems" / "kubo.py"
    kubo.write_text(kubo.read_text() + "\n" + importing)
    provenance.cache_clear()
    before = _digests()
    _edit_code(package_copy / "systems" / "zeitlin.py")
    after = _digests()
    assert {name for name in before if after[name] != before[name]} == {"all", "kubo", "zeitlin"}


def test_a_registry_takes_only_classes_from_the_modules_it_does_not_follow():
    """What makes skipping a registry's imports of its own package sound: it takes classes from them (whose code
    counts, for a run of one, through the class's own module and its bases'), never a function its own code runs."""
    for registry in provenance.REGISTRIES:
        package = "sgi_run." + registry.partition("/")[0]
        tree = ast.parse((provenance.PACKAGE / registry).read_text())
        imported = [(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and (node.module or "").startswith(package + ".") for alias in node.names]
        assert imported
        for module, name in imported:
            assert inspect.isclass(getattr(__import__(module, fromlist=[name]), name)), (registry, module, name)


def test_a_class_of_ones_own_counts_the_numerics_modules_its_module_imports(package_copy):
    """This test module's class imports sgi_run.systems.langevin (as a user's module would): an edit there is its."""
    from sgi_run.systems.langevin import LangevinHarmonic

    class Own(LangevinHarmonic):
        pass

    own = (Own, *integrators.FAMILIES["explicit_srk"])
    before = provenance.code_digest(*own), provenance.code_digest(*RUNS["kubo"])
    _edit_code(package_copy / "systems" / "langevin.py")
    after = provenance.code_digest(*own), provenance.code_digest(*RUNS["kubo"])
    assert after[0] != before[0] and after[1] == before[1]


def test_a_module_outside_the_numerics_layers_counts_where_numerics_code_imports_it(package_copy):
    """engine/checkpoint.py imports sgi_run/store.py: an edit there is every run's. The package's own __init__,
    which imports the whole API for users, is no run's."""
    before = _digests()
    _edit_code(package_copy / "store.py")
    after = _digests()
    assert all(after[name] != before[name] for name in before)
    _edit_code(package_copy / "__init__.py")
    assert _digests() == after
