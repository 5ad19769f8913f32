"""Throughput benchmark, the report: the machine description, each workload's summary (ratios, the
fastest setting per method, cross-checks) and the markdown written beside the JSON."""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
from collections.abc import Callable

import numpy as np

import jax

from sgi_run.core import jax_setup

jax_setup.configure()   # float64 before any array is made

SCHEMA = "sgi-run/bench/throughput/2"


# ------------------------------------------------------------------------------------------------
# Machine description
# ------------------------------------------------------------------------------------------------
def machine() -> dict:
    def cpuinfo(key):
        try:
            for line in open("/proc/cpuinfo"):
                if line.split(":")[0].strip() == key:
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return None

    def meminfo_gib():
        try:
            for line in open("/proc/meminfo"):
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 2)
        except OSError:
            return None

    def os_name():
        try:
            for line in open("/etc/os-release"):
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
        return platform.system()

    def version(mod):
        try:
            return __import__(mod).__version__
        except Exception:
            return None

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu_model": cpuinfo("model name") or platform.processor(),
        "cpu_cores_logical": os.cpu_count(),
        "cpu_cores_usable": usable,
        "memory_gib": meminfo_gib(),
        "os": f"{os_name()} (kernel {platform.release()}, {platform.machine()})",
        "python": platform.python_version(),
        "jax": version("jax"), "jaxlib": version("jaxlib"), "diffrax": version("diffrax"),
        "equinox": version("equinox"), "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **_code_version(),
    }


def machine_line(m: dict) -> str:
    """A report's line naming the machine (``machine()``'s record), up to the date."""
    return (f"Machine: {m.get('cpu_model')} ({m.get('cpu_cores_usable')} usable cores, {m.get('memory_gib')} GiB); "
            f"JAX {m.get('jax')} on {m.get('jax_backend')}")


def write_report(out, stem: str, doc: dict, text: str) -> None:
    """``<out>/<stem>.json`` (the numbers) and ``<out>/<stem>.md`` (``text``, their report), printed too."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(text)


def _code_version() -> dict:
    """The sgi-run commit benchmarked, and whether the sources differ from it (``provenance.source_commit``)."""
    from sgi_run.provenance import source_commit
    version = source_commit()
    return {"git_commit": version["commit"], "sgi_run_uncommitted_changes": version["uncommitted_changes"]}


def commit_text(m: dict) -> str:
    """The benchmarked commit as a report names it."""
    from sgi_run.provenance import commit_text as text
    return text({"commit": m.get("git_commit"), "uncommitted_changes": m.get("sgi_run_uncommitted_changes")})


# ------------------------------------------------------------------------------------------------
# Reporting
# ------------------------------------------------------------------------------------------------
def _z(a: dict, b: dict) -> float:
    return (a["mean_T"] - b["mean_T"]) / math.sqrt(a["se_T"] ** 2 + b["se_T"] ** 2)


def summarize(results: list[dict], workload_exact: Callable | None) -> dict:
    """The summary of one workload's results: ratios, the fastest entry per group, cross-checks."""
    ref = next((r for r in results if r["reference"]), None)
    for r in results:
        r["ratio_vs_reference"] = r["path_steps_per_s"] / ref["path_steps_per_s"] if ref else None
    best_by_group: dict[str, dict] = {}
    for r in results:
        g = best_by_group.get(r["group"])
        if g is None or r["path_steps_per_s"] > g["path_steps_per_s"]:
            best_by_group[r["group"]] = r
    primary = [r["id"] for r in best_by_group.values()]

    checks = []
    sgi_heun = best_by_group.get("sgi-run heun")
    for r in results:
        if r["engine"] == "diffrax" and r["method"] == "diffrax Heun" and sgi_heun is not None:
            z = _z(r, sgi_heun)
            checks.append({"a": r["id"], "b": sgi_heun["id"], "what": f"E({r['observable']})(T)",
                           "a_mean": r["mean_T"], "a_se": r["se_T"], "b_mean": sgi_heun["mean_T"],
                           "b_se": sgi_heun["se_T"], "difference": r["mean_T"] - sgi_heun["mean_T"],
                           "z": z, "agree_within_3se": abs(z) < 3.0})
    # No sgi-run Heun (the heavy top): diffrax Heun against each sgi-run method, different schemes,
    # so the same expectation only up to their weak biases at this dt.
    if sgi_heun is None:
        for r in results:
            if r["engine"] != "diffrax" or r["method"] != "diffrax Heun" or r["paths"] < 2:
                continue
            for g in (g for g in best_by_group.values() if g["engine"] == "sgi-run"):
                z = _z(r, g)
                checks.append({"a": r["id"], "b": g["id"], "what": f"E({r['observable']})(T)", "same_scheme": False,
                               "a_mean": r["mean_T"], "a_se": r["se_T"], "b_mean": g["mean_T"], "b_se": g["se_T"],
                               "difference": r["mean_T"] - g["mean_T"], "z": z, "agree_within_3se": abs(z) < 3.0})
    # Shard layouts address random numbers by path index, so both layouts give the same mean.
    for g in {r["group"] for r in results if r["engine"] == "sgi-run"}:
        rs = [r for r in results if r["group"] == g]
        if len(rs) > 1:
            checks.append({"a": rs[0]["id"], "b": rs[1]["id"], "what": "same random numbers, different layout",
                           "a_mean": rs[0]["mean_T"], "b_mean": rs[1]["mean_T"],
                           "difference": rs[0]["mean_T"] - rs[1]["mean_T"],
                           "agree_within_1e-12": abs(rs[0]["mean_T"] - rs[1]["mean_T"]) < 1e-12})
    # Many methods on one problem: the spread of their E(H)(T) (weak bias at this dt plus noise).
    sgi = [r for r in best_by_group.values() if r["engine"] == "sgi-run"]
    if len(sgi) > 2:
        lo, hi = min(sgi, key=lambda r: r["mean_T"]), max(sgi, key=lambda r: r["mean_T"])
        checks.append({"what": "spread over sgi-run methods", "a": lo["id"], "b": hi["id"], "methods": len(sgi),
                       "a_mean": lo["mean_T"], "b_mean": hi["mean_T"], "difference": hi["mean_T"] - lo["mean_T"],
                       "se_max": max(r["se_T"] for r in sgi)})
    exact = None
    if workload_exact is not None and results:
        exact = float(workload_exact(results[0]["T"]))
        for r in results:
            r["exact_mean_T"] = exact
    return {"reference": ref["id"] if ref else None, "primary": primary, "crosschecks": checks,
            "exact_mean_T": exact}


def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def _fmt_load(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _fmt_ratio(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _fmt_newton(r: dict) -> str:
    """Solver iterations per path-step, mean / max, and the solver (Newton, chord, fixed point) where known."""
    if r.get("newton_per_step") is None:
        return "n/a"
    if not r["newton_iterations"]:
        return "explicit"
    return f"{r['newton_per_step']:.3f} / {r['newton_max_per_step']}" + (f" ({r['solver']})" if r.get("solver") else "")


def _conserved(results: list[dict]) -> list[str]:
    """The conserved observables (Casimirs) whose largest change at T the results carry."""
    names: list[str] = []
    for r in results:
        names += [n for n in r.get("conserved_max_change_T") or {} if n not in names]
    return names


def _fmt_change(r: dict, name: str) -> str:
    x = (r.get("conserved_max_change_T") or {}).get(name)
    return "n/a" if x is None else f"{x:.1e}"


def _workload_markdown(doc: dict, wl: dict) -> list[str]:
    s, by_id = wl["summary"], {r["id"]: r for r in doc["results"]}
    res = [r for r in doc["results"] if r["system"] == wl["system"]]
    p = ", ".join(f"{k}={v}" for k, v in wl["params"].items())
    lines = [f"## {wl['system']}", "",
             f"System `{wl['system']}` ({p}); {wl['paths']:,} paths x {wl['steps']:,} steps, "
             f"dt = {wl['dt']:g}, T = {wl['T']:g}.",
             f"{wl['sde']}; observable H (the system's energy) at T."
             + (f" Exact E(H)(T) = {s['exact_mean_T']:.6f} (paper eq. 4.2-4.3)." if s["exact_mean_T"]
                else " No exact E(H)(T) is known: the E(H)(T) column is a cross-check between methods."), ""]
    ref = by_id.get(s["reference"])
    conserved = _conserved(res)
    head = ("| method | setting | paths | steps | compile s | run s | path-steps/s | ratio vs reference "
            "| solver it./step mean / max | E(H)(T) ± SE |" + "".join(f" max \\|Δ{n}\\| at T |" for n in conserved))
    rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|---|" + "---:|" * len(conserved)

    def row(r):
        return (f"| {r['method']} | {r['setting']} | {r['paths']:,} | {r['steps']:,} | {r['compile_s']:.2f} "
                f"| {r['run_s']:.2f} | {_fmt_rate(r['path_steps_per_s'])} | {_fmt_ratio(r['ratio_vs_reference'])} "
                f"| {_fmt_newton(r)} | {r['mean_T']:.6f} ± {r['se_T']:.1e} |"
                + "".join(f" {_fmt_change(r, n)} |" for n in conserved))

    lines += ["### Results (fastest setting of each method)", "",
              f"Ratio is path-steps/s over that of {ref['method']} ({ref['setting']})." if ref else "", "",
              head, rule, *(row(by_id[i]) for i in s["primary"]), ""]
    for i in s["primary"]:
        r = by_id[i]
        if r["paths"] != wl["paths"]:
            lines.append(f"- {r['method']} ({r['setting']}) was timed on {r['paths']:,} paths, not "
                         f"{wl['paths']:,}, and {len(r['run_s_all'])} time(s): an indication of its cost, "
                         "not a like-for-like figure.")
    lines += ["- solver it./step: iterations of the implicit solver per path-step (Newton, chord or fixed-point "
              "iterations, as the method's conf/integrator/ file sets `solver`, named in brackets; SHAKE "
              "iterations for constrained methods), mean over all paths and steps / most in one step of any path "
              "(summed over a step's implicit stage solves)."]
    if conserved:
        lines.append(f"- max |ΔC| at T: for each Casimir C ({', '.join(conserved)}), the largest |C(z_T) - C(z_0)| "
                     "over all paths (finite ones), from every path's final state.")
    for i in s["primary"]:
        r = by_id[i]
        if r.get("unconverged_steps"):
            lines.append(f"- {r['method']}: {r['unconverged_steps']:,} path-steps whose solve did not converge "
                         "(counted by the engine; see the method's `on_fail`).")
        if r["count"] < r["paths"]:
            lines.append(f"- {r['method']}: {r['paths'] - r['count']:,} of {r['paths']:,} paths non-finite at T "
                         "(left out of E(H)(T) and max |ΔC|).")
    lines += [""]
    lines += ["### All measured settings", "",
              head + " first call s | all runs s (wall) | all runs s (process CPU) | others, cores |",
              rule + "---:|---|---|---|"]
    lines += [row(r) + f" {r['first_call_s']:.2f} | {', '.join(f'{x:.2f}' for x in r['run_s_all'])} "
              f"| {', '.join(f'{x:.2f}' for x in r['cpu_s_all'])} "
              f"| {', '.join(_fmt_load(x) for x in r['other_processes_cores_all'])} |" for r in res]
    lines += [""]
    lines += ["### Cross-checks", ""]
    for c in s["crosschecks"]:
        if "z" in c:
            lines.append(f"- {c['what']}: {c['a']} = {c['a_mean']:.6f} ± {c['a_se']:.1e} vs {c['b']} = "
                         f"{c['b_mean']:.6f} ± {c['b_se']:.1e}; difference {c['difference']:+.2e} = "
                         f"{c['z']:+.2f} combined SE -> {'agree' if c['agree_within_3se'] else 'DISAGREE'} "
                         + ("(independent random numbers; same scheme, so the same expectation)."
                            if c.get("same_scheme", True) else
                            "(independent random numbers, different schemes: the same expectation up to "
                            "their weak biases at this dt)."))
        elif "se_max" in c:
            lines.append(f"- E(H)(T) over the {c['methods']} sgi-run methods: from {c['a_mean']:.6f} ({c['a']}) "
                         f"to {c['b_mean']:.6f} ({c['b']}), spread {c['difference']:.1e} = "
                         f"{c['difference'] / c['se_max']:.1f} x the largest SE (weak bias at this dt; "
                         "methods with the same noise kind share random numbers).")
        else:
            lines.append(f"- {c['what']}: {c['a']} and {c['b']} means differ by {c['difference']:.1e} "
                         f"-> {'identical' if c['agree_within_1e-12'] else 'DIFFERENT'}.")
    return lines + [""]


def markdown(doc: dict) -> str:
    if doc.get("schema") != SCHEMA:
        raise SystemExit(f"{doc.get('schema')}: not {SCHEMA}; rerun the benchmark")
    m, res = doc["machine"], doc["results"]
    lines = ["# Throughput: sgi-run engine vs diffrax", ""]
    lines += [f"Generated by `benchmarks/throughput.py` (`make bench`) on {m['date_utc']}. "
              "Workloads: " + ", ".join(f"{w['system']} ({w['paths']:,} paths x {w['steps']:,} steps, "
                                        f"dt = {w['dt']:g})" for w in doc["workloads"]) + ".", ""]
    lines += ["## Machine", "",
              f"- CPU: {m['cpu_model']}, {m['cpu_cores_logical']} logical cores "
              f"({m['cpu_cores_usable']} usable by this process)",
              f"- Memory: {m['memory_gib']} GiB",
              f"- OS: {m['os']}",
              f"- Python {m['python']}; jax {m['jax']}, jaxlib {m['jaxlib']}, diffrax {m['diffrax']}, "
              f"equinox {m['equinox']}, numpy {m['numpy']}",
              f"- JAX backend: {m['jax_backend']}; devices: {', '.join(m['jax_devices'])}; "
              f"float64: {m['jax_enable_x64']}; XLA_FLAGS: {m['XLA_FLAGS'] or '(unset)'}",
              f"- {commit_text(m)}",
              f"- 1-minute load average: {_fmt_load(m.get('load1_at_start'))} before the benchmark started, "
              f"{_fmt_load(m.get('load1_at_end'))} at its end (per run in the JSON)",
              ""]
    best_others = [r["other_processes_cores_best_run"] or 0.0 for r in res]
    all_others = [x for r in res for x in r["other_processes_cores_all"] if x is not None]
    if best_others and max(best_others) > 0.2:
        lines += [f"**Warning:** other processes used up to {max(best_others):.2f} of the "
                  f"{m['cpu_cores_usable']} cores during reported (best) runs (column 'others, cores'); "
                  "those wall times are inflated, and not alike for all entries (they use the second core "
                  "to different degrees), so the ratios are not reliable either. Rerun on a quiet machine.", ""]
    elif all_others and max(all_others) > 0.2:
        lines += [f"Note: other processes used up to {max(all_others):.2f} cores during some timed runs, "
                  "but not during any reported (best) run (at most "
                  f"{max(best_others):.2f} cores); see 'others, cores'.", ""]
    lines += ["## Method", "",
              f"Timing: one warm-up (compile) call, then best of {doc['settings']['repeats']} timed runs "
              "(see 'all runs s'; secondary entries may be timed once). "
              "sgi-run is timed as its engine (`Simulator.run_shard` over every shard, moments merged; "
              "no HDF5). diffrax is `jit(vmap(diffeqsolve))` with `MultiTerm(ODETerm, ControlTerm)`, "
              "`Heun()`, `ConstantStepSize` dt0 = dt, `SaveAt(t1=True)`, `ForwardMode` adjoint; "
              "results `block_until_ready`. path-steps/s = paths x steps / run s. "
              "compile s = first-call wall time minus the run time of the same work. "
              "'process CPU' is this process's CPU time (all its threads); 'others, cores' is the "
              "CPU used by other processes during the run, in cores (from /proc/stat).", ""]
    for wl in doc["workloads"]:
        lines += _workload_markdown(doc, wl)
    lines += [f"Total benchmark wall time: {doc['total_s']:.0f} s.", ""]
    return "\n".join(lines)
