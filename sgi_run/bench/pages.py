"""The documentation site's benchmark pages, made from a suite's ``results.json`` (``bench.results``):

- ``bench/index.md``, "Which method for my system?": per system and target error, the cheapest method that reaches
  it, its cost and the runner-up; then the orders-verified matrix (methods x systems, each cell coloured by its
  verdicts);
- ``bench/<system>.md``: the system's work-precision diagram, its cheapest methods, every cell's orders, claims,
  verdicts, drifts and solver failures, its rows per step size, and the pairs that do not fit, with why.

Failed, unconverged and non-finite cells are shown as such; nothing is left out.
"""
from __future__ import annotations

import math

from sgi_run.bench.verdicts import FAIL, NO_CLAIM, NONFINITE, PASS, UNCONVERGED, UNRESOLVED
from sgi_run.markdown import table

DIR = "bench"
# The site's badge classes (docs/stylesheets/sgi.css) of each verdict.
CLASSES = {PASS: "pass", FAIL: "fail", UNCONVERGED: "stale", NONFINITE: "stale", UNRESOLVED: "skip",
           NO_CLAIM: "skip", "NOT MEASURED": "skip"}
# The verdict a matrix cell is coloured by: its worst.
SEVERITY = (FAIL, UNCONVERGED, NONFINITE, PASS, UNRESOLVED, NO_CLAIM, "NOT MEASURED")


NO_RESULTS = ("# Which method for my system?\n\nNo benchmark suite is kept here yet: `make bench-suite` runs it "
              "(`sgi-bench --output gallery/bench` keeps it for this site).\n")


def page_of(system_name: str) -> str:
    return f"{DIR}/{system_name}.md"


def _number(x, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _order(cell: dict, kind: str) -> str:
    order = cell.get(f"{kind}_order")
    if order is None:
        return "–"
    low, high = cell.get(f"{kind}_ci_low"), cell.get(f"{kind}_ci_high")
    finite = low is not None and high is not None and math.isfinite(low) and math.isfinite(high)
    return f"{order:.2f}" + (f" [{low:.2f}, {high:.2f}]" if finite else "")   # as many decimals as the order


def badge(text: str, verdict: str) -> str:
    return f'<span class="sgi-badge sgi-{CLASSES.get(verdict, "skip")}">{text}</span>'


def _claimed(value) -> str:
    return "none" if value is None else f"{value:g}"


def _provenance(record: dict) -> str:
    complete = "" if record.get("complete") else (" **Incomplete: the suite had not finished when these results "
                                                   "were written; the systems below are those it had.**")
    commit = (record.get("commit") or "unknown")[:12]
    return (f"Computed at `{record['fidelity']}` fidelity by `{record['command']}` on {record['device']} "
            f"(sgi-run {record['sgi_run']}, commit `{commit}`, JAX {record['jax']}, {record['date_utc']} UTC) in "
            f"{record['wall_s'] / 60:.1f} minutes{_reused(record['systems'])}.{complete}")


def _reused(systems: list[dict]) -> str:
    """How many studies a run took from the cache (its wall time is then not what computing them costs)."""
    studies = [c for s in systems for c in s["cells"] if c.get("fits")]
    reused = sum(bool(c.get("cached")) for c in studies)
    return (f", {reused} of its {len(studies)} studies reused from the cache (each study's own compute time is in "
            f"its system's table)" if reused else "")


def index_page(record: dict) -> str:
    systems = record["systems"]
    lines = ["# Which method for my system?", "",
             "Every integrator of sgi-run on every system it fits, each system's methods measured on the same "
             "Brownian paths against one shared reference (the exact solution, or one method on a grid finer than "
             "every method's), each method's cost timed in one series per system on one device. For each target "
             "error, the cheapest method that reaches it (wall time per path, interpolated between its step sizes; "
             "\"at most\" where even its coarsest step is below the target) and the next cheapest. Only errors "
             "resolvable above the Monte Carlo noise count, and only cells whose solves converged and whose paths "
             "stayed finite.", "", _provenance(record), "",
             "Run it yourself: `make bench-suite` (this page's suite), or `sgi-bench --system my_system.yaml` for "
             "every fitting method on a system of your own.", ""]
    for system in systems:
        lines += [f"## [{system['label']}]({system['name']}.md)", ""]
        for kind, what in (("strong", "strong error (RMS of the state at T)"),
                           ("weak", f"weak error of E {system['observable']}(T)")):
            best = system["cheapest"].get(kind) or []
            if not best:
                continue
            lines += [f"**{what}**", ""]
            rows = [[f"{b['error']:.0e}", f"`{b['method']}`",
                     ("≤ " if b["at_most"] else "") + f"{b['seconds_per_path']:.2e} s",
                     f"`{b['runner_up']}` ({b['ratio']:.2g}x)"] for b in best]
            lines += table(["target error", "cheapest", "cost per path", "runner-up (cost ratio)"], rows) + [""]
        if not any(system["cheapest"].get(k) for k in ("strong", "weak")):
            lines += ["No target error is reached by two methods with resolvable errors: see the system's page.", ""]
    lines += ["## Orders verified", "",
              "Each cell: the strong order (S), the weak order (W) and the invariants kept exactly (I), each "
              "coloured by its verdict against the method's claim for the system's noise class (green PASS, red "
              "FAIL, orange unconverged or non-finite, grey no claim or not resolvable); – the pair does not fit. "
              "An order claim p holds when the fitted order's 95% interval reaches p - 0.1 and lies above zero.", ""]
    methods = sorted({c["integrator"] for s in systems for c in s["cells"]})
    header = ["method"] + [f"[{s['name']}]({s['name']}.md)" for s in systems]
    rows = []
    for method in methods:
        row = [f"`{method}`"]
        for system in systems:
            cell = next((c for c in system["cells"] if c["integrator"] == method), None)
            row.append(_matrix_cell(cell))
        rows.append(row)
    lines += table(header, rows) + [""]
    lines += ["Noise classes: " + ", ".join(f"{s['name']}: {(s['facts'] or {}).get('noise_class', '–')}"
                                            for s in systems) + ".", ""]
    return "\n".join(lines)


def _matrix_cell(cell: dict | None) -> str:
    if cell is None or not cell["fits"]:
        return "–"
    parts = []
    for short, kind in (("S", "strong"), ("W", "weak")):
        verdict = cell.get(f"{kind}_verdict")
        if verdict != "NOT MEASURED":
            order = cell.get(f"{kind}_order")
            parts.append(badge(f"{short} {_number(order, 2)}", verdict))
    if cell.get("invariant_verdict") not in (None, NO_CLAIM):
        parts.append(badge("I", cell["invariant_verdict"]))
    return " ".join(parts)


def system_page(record: dict, system: dict) -> str:
    facts = system.get("facts") or {}
    lines = [f"# {system['label']}", "", _provenance(record), "",
             f"- config: `{' '.join(system['overrides'])}`",
             f"- structure: {facts.get('structure', '–')}, {facts.get('noises', '–')} noise(s), noise class "
             f"**{facts.get('noise_class', '–')}** (measured: the noise fields' differences and brackets)",
             f"- invariants: {', '.join(facts.get('invariants') or []) or 'none'}"
             + (f" (quadratic: {', '.join(facts['quadratic'])})" if facts.get("quadratic") else ""),
             f"- reference: {system['reference']}; T = {system['T']:g}; weak errors of E {system['observable']}(T)",
             f"- measured in {system['wall_s']:.0f} s (its studies and timings){_reused([system])}", ""]
    if system.get("plot"):
        lines += [f'<a href="{system["plot"]}"><img class="sgi-figure" src="{system["plot"]}" '
                  f'alt="work-precision diagram of {system["name"]}"></a>', ""]
    fitting = [c for c in system["cells"] if c["fits"]]
    if fitting:
        lines += ["## The methods", ""]
        rows = []
        for c in fitting:
            rows.append([f"`{c['integrator']}`", c["error_kind"],
                         f"{_order(c, 'strong')} (claims {_claimed(c.get('strong_claimed'))}) "
                         + badge(c["strong_verdict"], c["strong_verdict"]),
                         f"{_order(c, 'weak')} (claims {_claimed(c.get('weak_claimed'))}) "
                         + badge(c["weak_verdict"], c["weak_verdict"]),
                         f"{c.get('kept_claimed') or 'none'} " + badge(c["invariant_verdict"], c["invariant_verdict"]),
                         _number(c.get("largest_drift"), 2), str(c.get("unconverged_steps", "")),
                         str(c.get("nonfinite_paths", "")), f"{_number(c.get('study_wall_s'), 3)} s"])
        lines += table(["method", "study", "strong order [95%]", "weak order [95%]", "keeps (claimed)",
                        "largest drift", "unconverged steps", "non-finite paths", "study time"], rows) + [""]
        lines += ["## Per step size", ""]
        drift_names = sorted({k for r in system["rows"] for k in r if k.startswith("drift_")})
        rows = [[f"`{r['integrator']}`", f"{r['dt']:g}", _pm(r, "strong"), _pm(r, "weak"),
                 f"{r['seconds_per_path']:.2e}", f"{r['path_steps_per_s']:.3g}"]
                + [_number(r.get(k), 2) for k in drift_names] for r in system["rows"]]
        lines += table(["method", "dt", "strong error ± SE", "weak error ± SE", "s per path", "path-steps/s"]
                       + [k.removeprefix("drift_") + " drift" for k in drift_names], rows) + [""]
    apart = [c for c in system["cells"] if not c["fits"]]
    if apart:
        lines += ["## Methods that do not fit", ""]
        lines += table(["method", "why"], [[f"`{c['integrator']}`", c["reason"]] for c in apart]) + [""]
    return "\n".join(lines)


def _pm(row: dict, kind: str) -> str:
    error = row.get(f"{kind}_error")
    if error is None:
        return "–"
    mark = "" if row.get(f"{kind}_resolvable") else " (not resolvable)"
    return f"{error:.3e} ± {row[f'{kind}_se']:.1e}{mark}"
