"""The site's benchmark pages show every cell as measured: a FAIL, an unconverged cell and a pair that does not fit
are each shown as such, and an unconverged cell is never the cheapest method."""
import math
import re

from sgi_run.bench import pages, results
from sgi_run.bench.run import SystemResult
from sgi_run.bench.suite import SystemEntry

ENTRY = SystemEntry("toy", ("system=kubo",), "a toy system", 1.0, (0.2, 0.1, 0.05), "H", "exact")


def _cell(method, fits=True, **verdicts):
    base = {"system": "toy", "integrator": method, "fits": fits, "reason": "" if fits else "does not fit: no",
            "noise_class": "commutative", "noise_kind": "gaussian", "error_kind": "strong" if fits else ""}
    if not fits:
        return base
    return base | {"strong_order": 1.0, "strong_ci_low": 0.9, "strong_ci_high": 1.1, "strong_claimed": 1.0,
                   "strong_verdict": "PASS", "weak_order": math.nan, "weak_ci_low": math.nan, "weak_ci_high": math.nan,
                   "weak_claimed": 1.0, "weak_verdict": "UNRESOLVED", "kept_claimed": "", "invariant_verdict": "NO CLAIM",
                   "largest_drift": math.nan, "unconverged_steps": 0, "nonfinite_paths": 0, "study_wall_s": 1.0} | verdicts


def _rows(method, scale):
    return [{"system": "toy", "integrator": method, "error_kind": "strong", "dt": dt, "strong_error": scale * dt,
             "strong_se": scale * dt / 100, "strong_resolvable": True, "weak_error": math.nan, "weak_se": math.nan,
             "weak_resolvable": False, "nonfinite_paths": 0, "seconds_per_path": 1e-4 / dt, "path_steps_per_s": 1e5,
             "device": "cpu (test)"} for dt in (0.2, 0.1, 0.05)]


def _system():
    cells = [_cell("good"), _cell("bad", strong_verdict="FAIL", strong_order=0.4),
             _cell("stuck", strong_verdict="UNCONVERGED", unconverged_steps=12), _cell("other", fits=False)]
    # "stuck" is the cheapest by far: it must not be recommended.
    rows = _rows("good", 1.0) + _rows("bad", 2.0) + [r | {"seconds_per_path": r["seconds_per_path"] / 100}
                                                     for r in _rows("stuck", 1.0)]
    return SystemResult(ENTRY, None, cells, rows, 3.0)


def _record():
    system = _system()
    return {"tool": "sgi-bench", "fidelity": "smoke", "complete": True, "wall_s": 60.0, "command": "sgi-bench",
            "device": "cpu (test)", "sgi_run": "0", "commit": "abc", "jax": "0", "date_utc": "today",
            "systems": [{"name": "toy", "label": ENTRY.label, "overrides": list(ENTRY.overrides), "T": 1.0,
                         "reference": ENTRY.describe_reference(), "observable": "H", "wall_s": 3.0, "facts": None,
                         "cells": system.cells, "rows": system.rows, "cheapest": results.cheapest(system),
                         "plot": None}]}


def test_an_unconverged_cell_is_never_the_cheapest():
    best = results.cheapest(_system())["strong"]
    assert best and all("stuck" not in (b["method"], b["runner_up"]) for b in best)


def test_the_matrix_colours_each_verdict_and_marks_a_pair_that_does_not_fit():
    page = pages.index_page(_record())
    rows = {m: line for m in ("good", "bad", "stuck", "other") for line in page.splitlines() if f"| `{m}` |" in line}
    assert "sgi-pass" in rows["good"] and "sgi-fail" in rows["bad"] and "sgi-stale" in rows["stuck"]
    assert rows["other"].endswith("| – |")
    assert "[a toy system](toy.md)" in page


def test_a_system_page_shows_failures_and_the_pairs_that_do_not_fit_with_why():
    page = pages.system_page(_record(), _record()["systems"][0])
    assert re.search(r"`bad`.*0\.40 \[0\.90, 1\.10\] \(claims 1\).*FAIL", page)
    assert re.search(r"`stuck`.*UNCONVERGED.*\| 12 \|", page)
    assert "## Methods that do not fit" in page and "does not fit: no" in page


def test_an_unconverged_weak_only_cell_is_never_the_cheapest():
    system = _system()
    stuck = next(c for c in system.cells if c["integrator"] == "stuck")
    stuck.update(strong_verdict="NOT MEASURED", weak_verdict="UNCONVERGED")
    best = results.cheapest(system)["strong"]
    assert best and all("stuck" not in (b["method"], b["runner_up"]) for b in best)


def test_a_wall_time_from_reused_studies_says_so():
    record = _record()
    assert "minutes." in pages.index_page(record) and "reused" not in pages.index_page(record)
    for cell in record["systems"][0]["cells"][:2]:
        cell["cached"] = True
    assert "1.0 minutes, 2 of its 3 studies reused from the cache" in pages.index_page(record)
    assert "2 of its 3 studies reused from the cache" in pages.system_page(record, record["systems"][0])
