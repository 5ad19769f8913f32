"""Which numerics code computed a run: a digest of the code that makes its numbers.

The run cache is keyed by the config hash, so a run computed before a change to an integrator,
a system or the engine would otherwise be served as if the new code had made it. Each
``ensemble.h5`` (and each shard checkpoint) stores the digest of the code that computed it; a cached
run whose digest differs is reported as stale (``sgi_run.cache``; recomputed with ``cache=refresh_stale``).

A run's digest (``code_digest(system class, integrator class, ...)``) covers the code that run can execute and
nothing else, so an edit marks stale only the runs it can change:

- the shared layers every run goes through (``SHARED_LAYERS``: core and engine), whole;
- the modules defining the run's classes and their base classes, and every module of the package those import,
  transitively: the static import closure, of imports at module level and inside functions, relative ones,
  ``from sgi_run.x import y`` where ``y`` is a module, and module names written as strings (which ``importlib``
  and ``_target_`` use); not the package's own ``__init__``, which gathers its API for users;
- the registries (``REGISTRIES``), whose own code decides which class a config's name builds; the modules of the
  other classes a registry imports are not followed: they define code this run never calls (the test of this
  module checks that a registry takes only classes from them).

Each module counts by its syntax tree with docstrings removed, with its path: an edit of a comment, a docstring or
the layout changes no digest; moving code to another module does. (The tree is as this Python parses it: under
another Python version a run may read as stale, never as current when it is not.) A class of one's own outside the
package counts through its config (``class_digest``) and through the modules of the package its module imports (all
the numerics layers where its module's source cannot be read).
"""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

from sgi_run import bundled
from sgi_run.version import __version__

PACKAGE = bundled.PACKAGE
# A copy of the repository shipped elsewhere (a remote GPU machine gets the working tree, and at most a .git of
# some other commit) names the commit it was copied from here: ``SGI_RUN_COMMIT=$(git rev-parse HEAD)`` in the
# command that ships it. Where set it wins over the copy's own git.
COMMIT_VARIABLE = "SGI_RUN_COMMIT"
# The layers whose code determines a run's numbers (docs/architecture.md: core, systems, integrators, engine).
NUMERICS_LAYERS = ("core", "systems", "integrators", "engine")
# The layers every run goes through: all of their code counts for every run.
SHARED_LAYERS = ("core", "engine")
# The modules that map a config's name to a class (``systems.SYSTEMS``, ``integrators.FAMILIES``).
REGISTRIES = ("systems/__init__.py", "integrators/__init__.py")
# A module named in a string (importlib.import_module("sgi_run.x"), a ``_target_``).
_DOTTED_NAME = re.compile(r"sgi_run(\.[A-Za-z_]\w*)+")


def code_digest(*classes: type) -> str:
    """12 hex digits naming the numerics code a run of ``classes`` (its system's class, its integrator's class and
    tableau's) can execute (the module docstring says which); with no classes, all the numerics layers' code and
    what it imports (what a record of many runs, or a timing of many studies, was computed by)."""
    return _digest(PACKAGE, classes)


def cache_clear() -> None:
    """Forget the digests and parsed modules (after the sources changed within this process)."""
    _digest.cache_clear()
    _module.cache_clear()


@functools.lru_cache(maxsize=256)
def _digest(package: Path, classes: tuple[type, ...]) -> str:
    modules = _closure(package, _roots(package, classes) if classes else _layer_modules(package, NUMERICS_LAYERS))
    h = hashlib.sha256()
    for relative in sorted(modules):
        h.update(relative.encode())
        h.update(_module(package, relative)[0].encode())
    return h.hexdigest()[:12]


def _roots(package: Path, classes: tuple[type, ...]) -> set[str]:
    """The modules a run of ``classes`` starts from: the shared layers, the registries, the classes' own modules
    (their bases' too) and what a module of one's own outside the package imports of it."""
    roots = _layer_modules(package, SHARED_LAYERS) | set(REGISTRIES)
    for cls in classes:
        for klass in inspect.getmro(cls):
            relative = _module_file(package, klass.__module__)
            if relative is not None:
                roots.add(relative)
            elif any(_module_file(package, base.__module__) is not None for base in inspect.getmro(klass)):
                try:      # a class of one's own, derived from sgi-run's
                    tree = ast.parse(inspect.getsource(sys.modules[klass.__module__]))
                except (OSError, TypeError, KeyError, SyntaxError):
                    return _layer_modules(package, NUMERICS_LAYERS)   # what it imports is unknown: all counts
                roots |= _imports(package, tree, klass.__module__, is_package=False)
    return {relative for relative in roots if _counted(relative)}


def _layer_modules(package: Path, layers: tuple[str, ...]) -> set[str]:
    return {source.relative_to(package).as_posix() for layer in layers for source in (package / layer).rglob("*.py")}


def _closure(package: Path, roots: set[str]) -> set[str]:
    """``roots`` and the modules of the package they import, transitively; a registry's imports of its own package's
    modules are not followed (the module docstring says why)."""
    seen, todo = set(), list(roots)
    while todo:
        relative = todo.pop()
        if relative in seen:
            continue
        seen.add(relative)
        imported = _module(package, relative)[1]
        if relative in REGISTRIES:
            own = relative.rpartition("/")[0] + "/"
            imported = {name for name in imported if not name.startswith(own) or name == relative}
        todo.extend(imported - seen)
    return seen


def _counted(relative: str) -> bool:
    """Every module of the package but its own ``__init__``: importing any module runs it, and it gathers the API
    (runner, figures, the command line) rather than computing."""
    return relative != "__init__.py"


def _module_file(package: Path, dotted: str) -> str | None:
    """The path (relative to the package) of the module ``sgi_run.…`` names; None for another package's, or none."""
    parts = dotted.split(".")
    if parts[0] != "sgi_run":
        return None
    stem = "/".join(parts[1:])
    for candidate in ((f"{stem}.py", f"{stem}/__init__.py") if stem else ("__init__.py",)):
        if (package / candidate).is_file():
            return candidate
    return None


def _with_parents(package: Path, dotted: str) -> set[str]:
    """The module ``dotted`` and the packages above it, which importing it runs too."""
    parts = dotted.split(".")
    found = (_module_file(package, ".".join(parts[:n])) for n in range(1, len(parts) + 1))
    return {relative for relative in found if relative is not None}


def _imports(package: Path, tree: ast.AST, dotted: str, is_package: bool) -> set[str]:
    """The modules of the package (relative paths) the module ``dotted`` imports, anywhere in its code."""
    here = dotted.split(".") if is_package else dotted.split(".")[:-1]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here[:len(here) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            # ``from sgi_run.x import y``: y may be a module of its own.
            names |= {f"{base}.{alias.name}" for alias in node.names
                      if _module_file(package, f"{base}.{alias.name}") is not None}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED_NAME.fullmatch(node.value):
            # A module named in a string, or a class in it (``sgi_run.x.Y``): its longest importable prefix.
            parts = node.value.split(".")
            names |= {next((".".join(parts[:n]) for n in range(len(parts), 0, -1)
                            if _module_file(package, ".".join(parts[:n])) is not None), "sgi_run")}
    found = set().union(*(_with_parents(package, name) for name in names))
    return {relative for relative in found if _counted(relative)}


@functools.cache
def _module(package: Path, relative: str) -> tuple[str, frozenset[str]]:
    """A module's digest (its syntax tree without docstrings: comments and layout aside) and the modules of the
    package it imports."""
    tree = ast.parse((package / relative).read_bytes(), filename=relative)
    dotted = ".".join(["sgi_run", *Path(relative).with_suffix("").parts])
    is_package = relative.endswith("__init__.py")
    if is_package:
        dotted = dotted.rpartition(".")[0]
    imported = _imports(package, tree, dotted, is_package)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest(), frozenset(imported)


def class_digest(cls: type) -> str:
    """12 hex digits of the code of a system class of one's own (``systems.register``), which ``code_digest``
    does not cover: the source of the module that defines it (its helpers too), else the class's own source (a
    notebook's cell), else its methods' compiled code (a class typed into a plain interpreter). A run of that
    class is reused from the cache only while this is the same."""
    for source in (lambda: inspect.getsource(sys.modules[cls.__module__]), lambda: inspect.getsource(cls)):
        try:
            return hashlib.sha256(source().encode()).hexdigest()[:12]
        except (OSError, TypeError, KeyError):
            continue
    codes = sorted((name, value.__code__.co_code, repr(value.__code__.co_consts)) for name, value in vars(cls).items()
                   if hasattr(value, "__code__"))
    return hashlib.sha256(repr(codes).encode()).hexdigest()[:12]


def source_commit() -> dict:
    """The sgi-run commit this code is: ``{"commit": sha or None, "uncommitted_changes": bool or None}``.
    From ``$SGI_RUN_COMMIT`` where set (changes then unknown: None); else from git where the package sits in a
    checkout. ``uncommitted_changes`` counts the package and its configs only (what makes and describes the
    numbers). An installed package has no commit of its own (its version names it): git is not asked, since the
    directory it is installed in may sit in some other repository, whose commit it would name."""
    if os.environ.get(COMMIT_VARIABLE):
        return {"commit": os.environ[COMMIT_VARIABLE], "uncommitted_changes": None}
    if not bundled.in_checkout():
        return {"commit": None, "uncommitted_changes": None, "installed": __version__}

    def git(*args):
        try:
            done = subprocess.run(["git", *args], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--", "sgi_run", "conf", "experiments") if commit else ""
    return {"commit": commit or None, "uncommitted_changes": bool(changes) if commit else None}


def commit_text(version: dict) -> str:
    """A ``source_commit()`` as a report names it: "sgi-run commit 0d021ed1c2a4 (with uncommitted changes)"."""
    if version.get("installed"):
        return f"sgi-run {version['installed']} (an installed package)"
    changes = {True: " (with uncommitted changes to sgi_run/, conf/ or experiments/)", False: "",
               None: " (a shipped copy: uncommitted changes unknown)"}[version.get("uncommitted_changes")]
    return f"sgi-run commit {(version.get('commit') or 'unknown')[:12]}{changes}"
