"""``sgi-bench``: every integrator on every system it fits, measured against one shared reference per system, its
claimed orders checked, and which method is cheapest for a target error.

    sgi-bench                                    # the reduced suite: outputs/bench-suite/reduced/
    sgi-bench --fidelity smoke --systems kubo_undamped,rigid_body
    sgi-bench --system my_system.yaml            # every fitting method on a system of one's own
    sgi-bench --system kubo_formula --reference heun --dts 0.1,0.05,0.025
    sgi-bench --executor dask                    # the studies' shards on Dask

Every study is a cached ``sgi-run`` convergence study and every timing series is kept by round, so an
interrupted suite goes on from where it stopped when the same command is run again; the results files are
rewritten after each system.

Exit status: 0 when the suite ran (FAIL verdicts are results, not errors), 2 on bad input (one line on stderr),
130 on Ctrl-C (finished studies are kept; the same command goes on from them).
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from sgi_run import cache, provenance
from sgi_run.api import load_module
from sgi_run.bench import results as results_mod
from sgi_run.bench import suite as suite_mod
from sgi_run.bench.cells import default_observable, default_reference
from sgi_run.bench.run import run_suite
from sgi_run.composition import ConfigSource, group_options
from sgi_run.config import CACHE_POLICIES
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.fields import is_real
from sgi_run.engine import executor
from sgi_run.figures.cli import OneLineParser

DEFAULT_DTS = (0.125, 0.0625, 0.03125, 0.015625, 0.0078125)


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="sgi-bench", description="Every integrator on every system it fits: errors, orders "
                      "against the claimed ones, invariant drifts and cost, against one shared reference per system.")
    p.add_argument("--fidelity", default="reduced", help="a profile of the suite file (smoke | reduced; default reduced)")
    p.add_argument("--systems", help="only these systems of the suite, comma-separated")
    p.add_argument("--methods", help="only these integrator options, comma-separated (default: every one that fits)")
    p.add_argument("--suite", default=str(suite_mod.SUITE_FILE), help="the suite file (default: conf/bench/suite.yaml)")
    p.add_argument("--system", metavar="FILE_OR_NAME",
                   help="benchmark one system instead of the suite: a system YAML of one's own (as conf/system/*.yaml) "
                        "or a system option's name")
    p.add_argument("--T", type=float, default=1.0, help="--system: the final time (default 1)")
    p.add_argument("--dts", help="--system: step sizes, coarse to fine, comma-separated (default 2^-3 .. 2^-7)")
    p.add_argument("--observable", help="--system: the observable of the weak errors (default H, else the first)")
    p.add_argument("--reference", default="auto",
                   help="--system: exact, a method's name, or auto (exact where the system has an exact path, else the "
                        "fitting method that claims the highest strong order for its noise class)")
    p.add_argument("--truncate", help="--system: null (default), log_dt or a bound on |dW|")
    p.add_argument("--config-dir", metavar="DIR", help="a directory of your own configs, as sgi-run --config-dir")
    p.add_argument("--module", action="append", default=[], metavar="FILE",
                   help="a Python file of your own that registers systems (sgi_run.register_system); repeatable")
    p.add_argument("--output", help="the results directory (default outputs/bench-suite/<fidelity>, or "
                                    "outputs/bench-suite/<system>-<fidelity>)")
    p.add_argument("--runs-root", default="outputs/runs", help="run directories (the run cache)")
    p.add_argument("--cache", choices=CACHE_POLICIES, default="reuse",
                   help="reuse finished studies (default), refresh_stale, or off (recompute every study)")
    p.add_argument("--executor", choices=executor.NAMES, default="local", help="where the studies compute their shards")
    p.add_argument("--executor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a key of conf/executor/<executor>.yaml, e.g. workers=4; repeatable")
    return p


def _own_system(args, source: ConfigSource, workdir: Path) -> tuple[suite_mod.SystemEntry, ConfigSource]:
    """The entry of ``--system``: a YAML file (copied as a config group option into ``workdir``, added to the search
    path) or an option's name; its study settings from the flags."""
    given = args.system
    if given.endswith((".yaml", ".yml")):
        path = Path(given)
        require("--system", given, path.is_file(), "a system YAML file that exists, or a system option's name")
        require("--config-dir", args.config_dir, args.config_dir is None,
                "not with --system FILE (put the file in your config directory and give its name)")
        (workdir / "system").mkdir(parents=True)
        shutil.copyfile(path, workdir / "system" / f"{path.stem}.yaml")
        source, name = ConfigSource(added=str(workdir)), path.stem
    else:
        require("--system", given, given in group_options("system", source),
                f"a system YAML file or one of {group_options('system', source)}")
        name = given
    dts = DEFAULT_DTS
    if args.dts:
        try:
            dts = tuple(float(d) for d in args.dts.split(","))
        except ValueError:
            raise ConfigError("--dts", args.dts, "step sizes > 0, coarse to fine, comma-separated") from None
    truncate = None if args.truncate in (None, "null") else args.truncate
    if truncate not in (None, "log_dt"):
        try:
            truncate = float(truncate)
        except ValueError:
            raise ConfigError("--truncate", args.truncate, "null, log_dt or a bound > 0") from None
    require("--T", args.T, is_real(args.T) and args.T > 0, "a number > 0")
    overrides = [f"system={name}"]
    observable = args.observable or default_observable(overrides, source)
    reference = default_reference(overrides, source) if args.reference == "auto" else args.reference
    entry = suite_mod.entry_of(name, {"overrides": overrides, "label": f"{name} (sgi-bench --system {given})",
                                      "T": args.T, "dts": list(dts), "observable": observable, "reference": reference,
                                      "truncate": truncate})
    return entry, source


def main(argv: list[str] | None = None) -> int:
    def refuse(err: ConfigError) -> int:
        print(f"sgi-bench: error: {err}", file=sys.stderr)
        return 2

    try:
        jax_setup.configure()
        args = _parser().parse_args(argv)
    except ConfigError as err:
        return refuse(err)
    except SystemExit as stop:
        return stop.code
    command = shlex.join(["sgi-bench", *(sys.argv[1:] if argv is None else argv)])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sgi-bench-") as workdir:
        try:
            for module in args.module:
                load_module(module)
            source = ConfigSource(added=args.config_dir)
            suite = suite_mod.read(args.suite)
            suite.fidelity(args.fidelity)
            if args.system:
                require("--systems", args.systems, args.systems is None, "not with --system")
                entry, source = _own_system(args, source, Path(workdir))
                suite = suite_mod.Suite({entry.name: entry}, suite.fidelities, {}, f"--system {args.system}")
                output = Path(args.output or f"outputs/bench-suite/{entry.name}-{args.fidelity}")
            else:
                suite = suite.only(args.systems.split(",") if args.systems else None)
                output = Path(args.output or f"outputs/bench-suite/{args.fidelity}")
            results_mod.check_output(output)
            for key, directory in (("--runs-root", args.runs_root), ("--output", str(output))):
                cache.check_writable(Path(directory), key, directory)
            where = [f"executor={args.executor}"] + [f"executor.{o}" for o in args.executor_option]
            prov = _provenance(command, suite.source)

            def write(done, complete, wall_s):
                results_mod.write(output, done, fidelity=args.fidelity, complete=complete, wall_s=wall_s,
                                  provenance=prov)
                print(f"    results ({len(done)}/{len(suite.systems)} systems): {output / results_mod.RESULTS}")

            methods = args.methods.split(",") if args.methods else None
            for method in methods or ():
                require("--methods", method, method in group_options("integrator", source),
                        f"integrator options: {group_options('integrator', source)}")
            done = run_suite(suite, args.fidelity, write, runs_root=args.runs_root, cache=args.cache,
                             executor=where, source=source, methods=methods)
        except ConfigError as err:
            return refuse(err)
        except KeyboardInterrupt:
            print("sgi-bench: interrupted; finished studies and timings are kept, the same command goes on from them",
                  file=sys.stderr)
            return 130
    _print_matrix(done)
    print(f"suite of {len(done)} systems in {time.perf_counter() - started:.0f} s: {output}")
    return 0


def _provenance(command: str, suite_source: str) -> dict:
    import datetime

    import jax

    from sgi_run.engine import device
    from sgi_run.version import __version__
    commit = provenance.source_commit()
    # The bundled suite by its place in the package, not the clone's absolute path.
    bundled = Path(suite_source).resolve() == suite_mod.SUITE_FILE.resolve()
    return {"command": command, "suite": "sgi_run's conf/bench/suite.yaml" if bundled else suite_source,
            "device": device.describe(), "jax": jax.__version__,
            "sgi_run": __version__, "commit": commit.get("commit"),
            "uncommitted_changes": commit.get("uncommitted_changes"),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")}


def _print_matrix(done) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title="claims checked (strong order / weak order / invariants kept)")
    for column in ("system", "method", "class", "strong", "weak", "kept"):
        table.add_column(column)
    style = {"PASS": "green", "FAIL": "bold red", "UNCONVERGED": "yellow", "NON-FINITE": "yellow"}
    paint = lambda v: f"[{style[v]}]{v}[/]" if v in style else v
    for system in done:
        for c in system.cells:
            if c["fits"]:
                table.add_row(c["system"], c["integrator"], c["noise_class"], paint(c["strong_verdict"]),
                              paint(c["weak_verdict"]), paint(c["invariant_verdict"]))
    Console().print(table)


if __name__ == "__main__":
    sys.exit(main())
