"""Wall time of ``make figures`` per figure: every experiment at one fidelity, from nothing, on this machine.

    python benchmarks/figures_wall_time.py [--fidelity reduced] [--only fig4_1 ...] [--out outputs/bench]

Writes ``figures-<fidelity>.json`` and ``figures-<fidelity>.md`` (the machine named, one row per figure,
the total) and ``figures-<fidelity>.log`` (what ``sgi-figures`` printed).

Each figure is ``sgi-figures --fidelity F --only paper/figure`` called in this one process, one figure
after the other, as ``make figures`` runs them, from nothing: a fresh run cache and a fresh JAX
compilation cache in a temporary directory, so neither an earlier gallery nor an earlier benchmark is
reused. Within the measurement, as in ``make figures``, compiled code is shared between figures, and a
run that an earlier figure computed (the same config) is reused from the run cache. A figure's wall
time covers composing and validating its configs, compiling, computing its new runs, drawing, the
acceptance checks and the gallery page; "runs s" is its computed runs' own wall times as recorded in
their HDF5 files (compilation included). Other processes' CPU during each figure is recorded (from
/proc/stat) so a loaded machine shows.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent


def _figure_record(figures_dir: Path, paper: str, figure: str) -> dict:
    path = figures_dir / paper / f"{figure}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _row(exp, record: dict, watch, status: int) -> dict:
    """A figure's row: its runs, its verdicts and its ``throughput_timing.Stopwatch``."""
    from sgi_run.figures.results import BY_CONSTRUCTION, verdict_counts

    counts = verdict_counts(record.get("checks", []))      # a check that holds by construction is counted apart
    # A study has a row per step size: one entry per run. A run another figure computed is reused from the
    # run cache, and its recorded wall time is that figure's.
    runs = {r["run"]: {"run": r["run"], "wall_s": float(r["wall_time_s"]), "cached": bool(r["cached"])}
            for r in record.get("table", []) + record.get("convergence", [])}
    return {"paper": exp.paper, "figure": exp.figure, "label": exp.label, "exit_status": status,
            "runs": list(runs.values()), "wall_s": watch.wall, "cpu_s": watch.cpu, "other_processes_cores": watch.others,
            **{k: counts[k] for k in ("PASS", "FAIL", "SKIP")}, "by_construction": counts[BY_CONSTRUCTION]}


def _computed(row: dict) -> tuple[int, int, float]:
    """(runs computed, runs reused from the cache, the computed runs' own wall time)."""
    fresh = [r for r in row["runs"] if not r["cached"]]
    return len(fresh), len(row["runs"]) - len(fresh), sum(r["wall_s"] for r in fresh)


def markdown(report: dict) -> str:
    from throughput_report import commit_text    # imports sgi_run.core: only after main has set the cache

    m, rows = report["machine"], report["figures"]
    total = sum(r["wall_s"] for r in rows)
    lines = [f"# `make figures FIDELITY={report['fidelity']}`: wall time per figure", "",
             f"Machine: {m['cpu_model']}, {m['cpu_cores_usable']} usable cores, {m['memory_gib']} GiB; "
             f"JAX {m['jax']} on {m['jax_backend']}; {commit_text(m)}; {m['date_utc']}.", "",
             "Every figure from nothing: a fresh run cache and a fresh JAX compilation cache; one process, figure "
             "after figure, as `make figures` runs them. \"runs s\" is the computed runs' own wall time "
             "(compilation included); the rest of a figure's wall time is drawing, checks and I/O. A run an earlier "
             "figure computed is reused from the run cache (\"reused\").", "",
             "| paper | figure | runs computed | reused | wall s | runs s | CPU s | other load (cores) | PASS | FAIL "
             "| SKIP | by construction |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        load = "?" if r["other_processes_cores"] is None else f"{r['other_processes_cores']:.2f}"
        status = "" if r["exit_status"] == 0 else f" (exit {r['exit_status']})"
        computed, reused, runs_s = _computed(r)
        lines.append(f"| {r['paper']} | {r['figure']}{status} | {computed} | {reused} | {r['wall_s']:.1f} | "
                     f"{runs_s:.1f} | {r['cpu_s']:.0f} | {load} | {r['PASS']} | {r['FAIL']} | {r['SKIP']} | "
                     f"{r.get('by_construction', 0)} |")
    checks = {k: sum(r.get(k, 0) for r in rows) for k in ("PASS", "FAIL", "SKIP", "by_construction")}
    computed, reused, runs_s = (sum(x) for x in zip(*map(_computed, rows))) if rows else (0, 0, 0.0)
    lines += [f"| **all** | **{len(rows)} figures** | {computed} | {reused} | **{total:.0f}** ({total / 60:.1f} min) "
              f"| {runs_s:.0f} | {sum(r['cpu_s'] for r in rows):.0f} | | {checks['PASS']} | {checks['FAIL']} "
              f"| {checks['SKIP']} | {checks['by_construction']} |", ""]
    slowest = sorted(rows, key=lambda r: -r["wall_s"])[:5]
    lines.append("Slowest: " + ", ".join(f"{r['paper']}/{r['figure']} {r['wall_s']:.0f} s" for r in slowest) + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    # The compilation cache's place is read when sgi_run.core is first imported: set it before any import.
    work = Path(tempfile.mkdtemp(prefix="sgi-figures-bench-"))
    os.environ["SGI_RUN_COMPILATION_CACHE"] = str(work / "jax")
    from throughput_report import machine
    from throughput_timing import Stopwatch

    from sgi_run.figures import cli, experiment

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fidelity", default="reduced", choices=experiment.FIDELITIES)
    p.add_argument("--only", action="append", metavar="FIGURE", help="a figure id or paper/figure; repeatable")
    p.add_argument("--experiments", default=str(ROOT / "experiments"))
    p.add_argument("--out", default=str(ROOT / "outputs" / "bench"))
    args = p.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"figures-{args.fidelity}"
    report = {"fidelity": args.fidelity, "machine": machine(), "figures": []}
    with open(f"{stem}.log", "w") as log:
        for exp in experiment.discover(args.experiments, args.only):
            print(f"{exp.paper}/{exp.figure} ...", end=" ", flush=True)
            with Stopwatch() as watch, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                status = cli.main(["--fidelity", args.fidelity, "--only", f"{exp.paper}/{exp.figure}",
                                   "--experiments", args.experiments, "--runs-root", str(work / "runs"),
                                   "--output", str(work / "figures")])
            row = _row(exp, _figure_record(work / "figures", exp.paper, exp.figure), watch, status)
            report["figures"].append(row)
            print(f"{watch.wall:.1f} s, {row['PASS']} PASS {row['FAIL']} FAIL {row['SKIP']} SKIP", flush=True)
            # Written after every figure: an interrupted measurement keeps the figures it finished.
            Path(f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
            Path(f"{stem}.md").write_text(markdown(report))
    print(f"wrote {stem}.md ({sum(r['wall_s'] for r in report['figures']) / 60:.1f} min in all); "
          f"the figures are in {work / 'figures'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
