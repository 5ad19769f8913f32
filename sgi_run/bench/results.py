"""The suite's results, as files a user reopens (each written whole or not at all, atomically):

- ``results.csv``: one row per cell and step size (a cell that does not fit: one row, its reason, no step size),
  each with its cell's orders, claims and verdicts;
- ``cells.csv``: one row per cell (the orders-verified matrix);
- ``results.h5``: the same two tables, a dataset per column (``cells/<column>``, ``rows/<column>``), and the
  suite's attributes (fidelity, device, wall time, whether it is complete, the commit);
- ``results.json``: everything the site's pages are made of (``bench.pages``), the tables, each system's facts and
  its cheapest methods per target error (``work_precision.cheapest``), strict JSON;
- ``<system>.png`` / ``.svg``: its work-precision diagram (``bench.plots``).

The directory is sgi-bench's: a new one, or one holding a ``results.json`` it wrote. Any other is refused
before anything runs, so that no user's file is ever written over.
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import h5py
import numpy as np

from sgi_run import store, work_precision
from sgi_run.bench import verdicts
from sgi_run.core.errors import ConfigError
from sgi_run.figures.records import strict_json

TOOL = "sgi-bench"
RESULTS = "results.json"


def check_output(directory: Path) -> None:
    """Refuse (one line naming ``--output``) a directory that holds files sgi-bench did not write."""
    directory = Path(directory)
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ConfigError("--output", str(directory), "a directory (this is a file)")
    marker = directory / RESULTS
    owned = False
    if marker.is_file():
        try:
            owned = json.loads(marker.read_text()).get("tool") == TOOL
        except (OSError, ValueError):
            owned = False
    if not owned and any(directory.iterdir()):
        raise ConfigError("--output", str(directory),
                          f"a new or empty directory, or one {TOOL} wrote (holding its {RESULTS}): this one holds "
                          "other files, which it would write over")


def _columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for row in rows for k in row))


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=_columns(rows), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                         for k, v in row.items()})
    return out.getvalue()


def _table(group: h5py.Group, rows: list[dict]) -> None:
    for column in _columns(rows):
        values = [row.get(column) for row in rows]
        if all(isinstance(v, bool) for v in values if v is not None) and any(v is not None for v in values):
            data = np.array([bool(v) for v in values])
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values if v is not None):
            data = np.array([math.nan if v is None else float(v) for v in values])
        else:
            # Fixed-length bytes: a variable-length string cannot carry HDF5's checksum filter.
            data = np.array([("" if v is None else str(v)).encode() for v in values])
        store.create_checked_dataset(group, column, data)


def all_rows(results) -> tuple[list[dict], list[dict]]:
    """(cells, rows per cell and step size with their cell's columns; a cell that does not fit as one row)."""
    cells, rows = [], []
    for system in results:
        cells += system.cells
        for cell in system.cells:
            mine = [r for r in system.rows if r["integrator"] == cell["integrator"]]
            rows += [cell | r for r in mine] if mine else [cell]
    return cells, rows


def cheapest(system) -> dict[str, list[dict]]:
    """Per error kind, the cheapest method at each target error and the runner-up (``work_precision.cheapest``):
    only resolvable errors of cells none of whose verdicts is UNCONVERGED or NON-FINITE."""
    trusted = {c["integrator"] for c in system.cells if c["fits"] and not verdicts.run_failed(c)}
    out = {}
    for kind in ("strong", "weak"):
        rows = [{"label": r["integrator"], "error": r[f"{kind}_error"], "resolvable": r[f"{kind}_resolvable"],
                 "seconds_per_path": r["seconds_per_path"]}
                for r in system.rows if r["integrator"] in trusted and not math.isnan(r[f"{kind}_error"])]
        out[kind] = work_precision.cheapest(rows)
    return out


def write(directory: Path, results, *, fidelity: str, complete: bool, wall_s: float, provenance: dict) -> None:
    """Every results file of ``results`` (a list of ``run.SystemResult``) in ``directory``; the plots too."""
    from sgi_run.bench import plots     # matplotlib only when a figure is drawn

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cells, rows = all_rows(results)
    attrs = {"tool": TOOL, "fidelity": fidelity, "complete": complete, "wall_s": wall_s} | provenance
    for system in results:
        if system.rows:
            plots.draw(system, directory / f"{system.entry.name}.png")
    store.write_text_atomically(directory / "cells.csv", csv_text(cells))
    store.write_text_atomically(directory / "results.csv", csv_text(rows))

    def fill(f):
        _table(f.create_group("cells"), cells)
        _table(f.create_group("rows"), rows)
        f.attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list)) or v is None else v) for k, v in attrs.items()})
    store.replace_atomically(directory / "results.h5", fill)
    record = attrs | {"systems": [{
        "name": s.entry.name, "label": s.entry.label, "overrides": list(s.entry.overrides), "T": s.entry.T,
        "reference": s.entry.describe_reference(), "observable": s.entry.observable, "wall_s": s.wall_s,
        "facts": None if s.facts is None else {
            "structure": s.facts.structure, "noises": s.facts.noises, "noise_class": s.facts.noise_class,
            "invariants": list(s.facts.invariants), "quadratic": list(s.facts.quadratic)},
        "cells": s.cells, "rows": s.rows, "cheapest": cheapest(s),
        "plot": f"{s.entry.name}.png" if s.rows else None} for s in results]}
    # results.json last: a directory holding it holds the rest, of the same run.
    store.write_text_atomically(directory / RESULTS, json.dumps(strict_json(record), indent=1, allow_nan=False) + "\n")


def read(directory: Path) -> dict:
    """A suite's ``results.json`` back (NaN written as null)."""
    return json.loads((Path(directory) / RESULTS).read_text())
