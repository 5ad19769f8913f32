"""The panel kinds' registry: full whenever it is read, and every kind's record usable by the load-time checks."""
import ast
from pathlib import Path

from sgi_run.figures import panels
from sgi_run.figures.panels import PANEL_KINDS


def _calls_register(source: str) -> bool:
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register"
               for node in ast.walk(ast.parse(source)))


def test_the_package_imports_every_module_that_registers_a_kind():
    """A kind is registered when its module is imported: one the package forgot would be missing from the
    registry, and refused as unknown, until something else happened to import it (as its own tests do)."""
    package = Path(panels.__file__).parent
    imported = {alias.name for node in ast.parse((package / "__init__.py").read_text()).body
                if isinstance(node, ast.ImportFrom) and node.module == "sgi_run.figures.panels" for alias in node.names}
    registering = {f.stem for f in package.glob("*.py") if f.stem != "__init__" and _calls_register(f.read_text())}
    assert registering and registering <= imported


def test_every_kind_lists_its_keys_with_its_quantity_and_runs_and_has_a_height_a_check_and_a_drawing():
    """Every kind lists the keys it takes (a key it does not take is refused: ``runz``, ``yscal``); one whose list
    lacked ``quantity`` or ``runs`` would refuse every panel of its kind."""
    assert set(PANEL_KINDS) >= {"mean", "error", "density", "convergence"}
    for name, kind in PANEL_KINDS.items():
        assert kind.name == name
        assert {"quantity", "runs"} <= set(kind.keys), name
        assert kind.height > 0 and callable(kind.check) and callable(kind.draw), name
