"""``sgi-figures``: run every paper figure's missing runs, draw it, check it, rebuild the gallery.

    sgi-figures --fidelity smoke
    sgi-figures --fidelity reduced --only fig4_1
    sgi-figures --fidelity paper --only fig4_1 --executor dask --executor-option address=tcp://host:8786
    sgi-figures --fidelity paper --only fig4_2 --output gallery/paper --pack packed/   # on a GPU machine
    sgi-figures --output gallery/paper --unpack packed/*.tar.gz                        # back in the checkout

A figure whose record in ``--output`` was made from exactly its runs' configs is kept, not recomputed
(``--cache``: ``refresh_stale`` also recomputes one made by other numerics code, ``off`` every one), so a
paper-fidelity sweep split over GPU windows goes on from the figures it finished; within a figure the run
cache and the shard checkpoints keep the finished runs.

Exit status: 0 when every figure was made (FAIL verdicts are results, not errors), 1 with
``--strict`` when any check FAILs, 2 on bad input (one line on stderr), 130 on Ctrl-C (finished runs
and shards are kept; the same command resumes).
"""
from __future__ import annotations

import argparse
import shlex
import sys
import tarfile
import time
from pathlib import Path

from sgi_run import bundled, cache, provenance
from sgi_run.api import load_module
from sgi_run.config import CACHE_POLICIES, ConfigSource
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.engine import executor
from sgi_run.figures.experiment import FIDELITIES
from sgi_run.figures.results import BY_CONSTRUCTION, counts_text, verdict_counts


class _Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line, never a usage block: a value outside a flag's choices and an
    argument that is no flag are ``ConfigError`` (``main`` prints them); argparse's other refusals (a flag
    without its value, an abbreviation of several flags) are its own words, also one line, exit status 2."""

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            raise ConfigError(action.option_strings[-1], value, f"one of {list(action.choices)}")

    def parse_args(self, args=None, namespace=None):
        known, unknown = self.parse_known_args(args, namespace)
        if unknown:
            flags = ", ".join(action.option_strings[-1] for action in self._actions)
            raise ConfigError("argument", unknown[0], f"a flag of {self.prog}: {flags}")
        return known

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sgi-figures", description="Run the missing runs of every paper figure, "
                "draw it, check it and rebuild the gallery.")
    p.add_argument("--fidelity", choices=FIDELITIES, default="reduced",
                   help="sampling profile of every figure (default: reduced)")
    p.add_argument("--only", action="append", metavar="FIGURE",
                   help="paper/figure (luesink_2023/fig1), or a figure id only one paper has (fig4_1); repeatable")
    p.add_argument("--experiments", action="append", default=[], metavar="DIR",
                   help="a directory of your own experiment files, <study>/<figure>.yaml, read beside the built-in "
                        "papers' (whose figures are then made only where --only names them); repeatable")
    p.add_argument("--config-dir", metavar="DIR",
                   help="a directory of your own configs (system/<name>.yaml, plan/<name>.yaml, ...) that the runs "
                        "of the figures may choose, as sgi-run --config-dir")
    p.add_argument("--module", action="append", default=[], metavar="FILE",
                   help="a Python file of your own that registers systems (sgi_run.register_system), imported before "
                        "the runs are composed; repeatable")
    p.add_argument("--output", default="outputs/figures", help="figures, tables and index.html")
    p.add_argument("--runs-root", default="outputs/runs", help="run directories (the run cache)")
    p.add_argument("--cache", choices=CACHE_POLICIES, default="reuse",
                   help="reuse finished runs (default; a run computed by other numerics code is reused and "
                        "marked), refresh_stale (recompute those), off (recompute every run)")
    p.add_argument("--executor", choices=executor.NAMES, default="local",
                   help="where missing runs compute their shards: local (default), dask (a LocalCluster, or "
                        "a scheduler: --executor-option address=tcp://host:8786), slurm (dask workers as SLURM "
                        "jobs: --executor-option queue=NAME); the numbers and the run cache are the same")
    p.add_argument("--executor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a key of conf/executor/<executor>.yaml, e.g. workers=4; repeatable")
    p.add_argument("--strict", action="store_true", help="exit 1 when any check FAILs")
    p.add_argument("--pack", metavar="DIR",
                   help="write each figure's files (PNG, table, checks, record) as DIR/<paper>-<figure>.tar.gz, one "
                        "small archive to bring back from a remote machine")
    p.add_argument("--unpack", nargs="+", metavar="ARCHIVE",
                   help="unpack archives written by --pack into --output and rebuild its gallery; makes no figure")
    return p


def _verdict_table(outcomes):
    from rich.table import Table
    table = Table(title="Acceptance checks")
    for column in ("figure", "check", "run", "measured", "verdict"):
        table.add_column(column, overflow="fold")
    style = {"PASS": "green", "FAIL": "bold red", "SKIP": "dim"}
    for o in outcomes:
        for c in o.checks:
            apart = f" ({BY_CONSTRUCTION})" if c.by_construction else ""
            table.add_row(o.experiment.figure, c.id, c.run, c.measured(), f"[{style[c.verdict]}]{c.verdict}[/]{apart}")
    return table


def pack(files: dict[str, Path], archive: Path) -> Path:
    """One figure's files as ``archive`` (tar.gz), named ``<paper>/<file>`` inside as in an output directory."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        for path in files.values():
            tar.add(path, arcname=f"{path.parent.name}/{path.name}")
    return archive


def unpack(archives: list[str], output: Path) -> list[str]:
    """Extract ``--pack`` archives into ``output``; the members each one holds. Only plain files under
    ``<paper>/`` are taken (tarfile's data filter refuses links and paths that leave ``output``)."""
    members = []
    for name in archives:
        try:
            with tarfile.open(name, "r:gz") as tar:
                tar.extractall(output, filter="data")
                members += tar.getnames()
        except (OSError, tarfile.TarError) as err:
            raise ConfigError("--unpack", name, f"an archive written by sgi-figures --pack ({err})") from err
    return members


def chosen_figures(experiments_dirs: list[str], only: list[str] | None):
    """(the figures to make, those the gallery lists): every figure --only names among the built-in papers' and
    the user's directories; without --only, every figure of the user's directories where any is named, else every
    built-in one. Two files of one paper/figure id anywhere are refused (``experiment.discover``)."""
    from sgi_run.figures import experiment

    # The built-in directory named again (a checkout's experiments/) is the built-in papers, not a second copy.
    user = [Path(d) for d in experiments_dirs if Path(d).resolve() != bundled.EXPERIMENTS_DIR.resolve()]
    everything = experiment.discover([bundled.EXPERIMENTS_DIR, *user])
    listed = [e for e in everything if not user or any(e.path.is_relative_to(d) for d in user)]
    where = "the built-in papers" + "".join(f" or {d}" for d in user)
    return (experiment.select(everything, only, where) if only else listed), listed


def _refuse(err: ConfigError) -> int:
    print(f"sgi-figures: error: {err}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    try:
        jax_setup.configure()
    except ConfigError as err:
        return _refuse(err)
    from sgi_run.figures import experiment, gallery
    from sgi_run.runner import WriteFailed
    from sgi_run.terminal import console as make_console

    try:
        args = _parser().parse_args(argv)
    except ConfigError as err:
        return _refuse(err)
    except SystemExit as stop:      # --help (0), or one of argparse's own refusals (2): a status, as every outcome
        return stop.code
    console = make_console()
    # The commit whose code this process runs: a checkout that moves during a long gallery must not rename it.
    source = provenance.source_commit()
    try:
        gallery.check_owned(args.output)    # the gallery replaces its README.md and index.html: never a user's
        for module in args.module:      # systems of one's own, registered before any run names them
            load_module(module)
        experiments, listed = chosen_figures(args.experiments, args.only)
    except ConfigError as err:
        return _refuse(err)
    if args.unpack:
        try:
            members = unpack(args.unpack, Path(args.output))
        except ConfigError as err:
            return _refuse(err)
        index = gallery.build(args.output, listed, gallery.PAPER_RESULTS)
        console.print(f"unpacked {len(members)} files into {args.output}; gallery: {index}")
        return 0
    command = shlex.join(["sgi-figures", *(sys.argv[1:] if argv is None else argv)])
    try:
        where = [f"executor={args.executor}"] + [f"executor.{o}" for o in args.executor_option]
        configs = ConfigSource(added=args.config_dir)
        # Every figure's runs are validated before the first computes (and each run then uses the Setup built here).
        composed = [experiment.compose_run_setups(exp, args.fidelity, args.runs_root, args.cache, where, configs)
                    for exp in experiments]
        for key, directory in (("--runs-root", args.runs_root), ("--output", args.output)):
            cache.check_writable(Path(directory), key, directory)
        outcomes = []
        for exp, runs in zip(experiments, composed):
            started = time.perf_counter()
            console.print(f"[bold]{exp.heading}[/] ({args.fidelity})", highlight=False)
            files = experiment.figure_files(exp, args.output)
            kept = experiment.kept_record(exp, args.fidelity, args.output, {i: cfg for i, (cfg, _) in runs.items()},
                                          args.cache)
            if kept is not None:
                made = kept.get("provenance", {})
                console.print(f"    kept: {files['json']} was made from these runs (commit "
                              f"{(made.get('commit') or 'unknown')[:12]}, {made.get('date_utc', 'date unknown')}, "
                              f"{made.get('device', 'device unknown')})", highlight=False)
                outcomes.append(experiment.FigureOutcome.from_record(exp, kept, files))
            else:
                outcomes.append(experiment.make_figure(
                    exp, args.fidelity, args.output, args.runs_root, cache=args.cache, executor=where, composed=runs,
                    log=lambda line: console.print(line, markup=False, highlight=False), command=command,
                    source=source))
                console.print(f"    wrote {outcomes[-1].files['png']} in {time.perf_counter() - started:.0f} s")
            console.print(f"    checks: {counts_text(verdict_counts(outcomes[-1].checks))}", highlight=False)
            if args.pack:
                archive = pack(files, Path(args.pack) / f"{exp.paper}-{exp.figure}.tar.gz")
                console.print(f"    packed {archive}")
    except ConfigError as err:
        return _refuse(err)
    except WriteFailed as err:          # a run's directory: its finished shards are kept
        print(f"sgi-figures: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:              # a figure's own files (png, table, record) in --output
        if err.errno not in WriteFailed.ERRNOS:
            raise
        print(f"sgi-figures: error: cannot write {err.filename or args.output} ({err.strerror}); finished runs are "
              "kept, the same command goes on from them", file=sys.stderr)
        return 1
    except KeyboardInterrupt as stop:
        print(f"sgi-figures: {stop or 'interrupted'}; finished runs are kept, the same command goes on from them",
              file=sys.stderr)
        return 130
    index = gallery.build(args.output, listed, gallery.PAPER_RESULTS)
    if outcomes:
        console.print(_verdict_table(outcomes))
    console.print(f"gallery: {index}")
    if outcomes:
        console.print(f"checks of {len(outcomes)} figures: "
                      f"{counts_text(verdict_counts([c for o in outcomes for c in o.checks]))}", highlight=False)
    # A by-construction check that FAILs is a bug, so --strict counts it too.
    failed = sum(c.verdict == "FAIL" for o in outcomes for c in o.checks)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
