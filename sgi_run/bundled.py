"""The YAML the package ships: the config groups (``conf/``) and the papers' experiment files (``experiments/``).

In a source checkout (and an editable install) they are the repository's top-level ``conf/`` and
``experiments/``. A built wheel (and a wheel built from the sdist) carries the same two directories inside the
package, as ``sgi_run/conf`` and ``sgi_run/experiments`` (``pyproject.toml``: the wheel's ``force-include``), so
an installed ``sgi-run`` composes its runs from any working directory. Nothing is ever written here: runs and
figures go under the working directory (``./outputs``) or where the user says.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _shipped(name: str) -> Path:
    """``name`` inside the installed package where a wheel put it, else the checkout's top-level one."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


CONF_DIR = _shipped("conf")
EXPERIMENTS_DIR = _shipped("experiments")


def in_checkout() -> bool:
    """Whether this code runs from a source checkout (its configs at the top level beside the package), not from
    an installed wheel: only a checkout has a commit to name (``provenance.source_commit``)."""
    return CONF_DIR.parent == PACKAGE.parent
