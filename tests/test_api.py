"""The public API (``sgi_run.__init__``): ``help(sgi_run)`` lists it, and each entry point documents
itself with an example that runs."""
import doctest
import inspect
import pydoc

import pytest

import sgi_run

PUBLIC = ["compose", "run", "load", "Ensemble"]


def documented():
    """The package, every public function, and the Ensemble class with its public methods and properties."""
    methods = [member for name, member in vars(sgi_run.Ensemble).items()
               if not name.startswith("_") and (callable(member) or isinstance(member, property))]
    return [sgi_run] + [getattr(sgi_run, name) for name in PUBLIC] + methods


def test_help_lists_the_public_api():
    text = pydoc.render_doc(sgi_run, renderer=pydoc.plaintext)
    assert set(PUBLIC) <= set(sgi_run.__all__)
    for name in PUBLIC:
        assert f"\n    {name}(" in text or f"class {name}" in text, name
    assert all(name in inspect.getdoc(sgi_run) for name in PUBLIC)


@pytest.mark.slow
@pytest.mark.parametrize("obj", documented(), ids=lambda obj: getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or obj.fget.__qualname__)
def test_each_entry_point_has_an_example_that_runs(obj, tmp_path, monkeypatch):
    """Examples run in a scratch directory (their runs go to its outputs/runs; they share one small
    config, so all but the first reuse it)."""
    monkeypatch.chdir(tmp_path)
    target = obj.fget if isinstance(obj, property) else obj
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(target, globs={"sgi_run": sgi_run}) if t.examples]
    assert tests, f"{target} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
