"""``sgi-figures``: run every paper figure's missing runs, draw it, check it, rebuild the gallery.

    sgi-figures --fidelity smoke
    sgi-figures --fidelity reduced --only fig4_1
    sgi-figures --fidelity paper --only fig4_1 --executor dask --executor-option address=tcp://host:8786
    sgi-figures --fidelity paper --only fig4_2 --output gallery/paper --pack packed/   # on a GPU machine
    sgi-figures --output gallery/paper --unpack packed/*.tar.gz                        # back in the checkout

A figure whose record in ``--output`` was made from exactly its runs' configs is kept, not recomputed
(``--cache``: ``refresh_stale`` also recomputes one made by other numerics code, ``off`` every one), so a
paper-fidelity sweep split over GPU windows goes on from the figures it finished; within a figure the run
cache and the shard checkpoints keep the finished runs. A figure's files are written whole, its record last, with
the sha256 of each and of its own content: a figure whose file is missing or changed, or whose record was edited,
is not kept but made again (one line says why).

Exit status: 0 when every figure was made (FAIL verdicts are results, not errors), 1 with
``--strict`` when any check FAILs, 2 on bad input (one line on stderr), 130 on Ctrl-C (finished runs
and shards are kept; the same command resumes).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shlex
import sys
import tarfile
import time
import zlib
from pathlib import Path

from sgi_run import bundled, cache, provenance, store
from sgi_run.api import load_module
from sgi_run.config import CACHE_POLICIES, ConfigSource
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError, require
from sgi_run.engine import executor
from sgi_run.figures import experiment, pipeline, records
from sgi_run.figures.experiment import FIDELITIES
from sgi_run.figures.results import BY_CONSTRUCTION, counts_text, verdict_counts


class OneLineParser(argparse.ArgumentParser):
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
    p = OneLineParser(prog="sgi-figures", description="Run the missing runs of every paper figure, "
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
                   help="write each figure's files (PNG, PDF, SVG, tables, checks, record) and their sha256 as "
                        "DIR/<paper>-<figure>.tar.gz, one small archive to bring back from a remote machine; a file "
                        "there under that name is replaced only if --pack wrote it")
    p.add_argument("--unpack", nargs="+", metavar="ARCHIVE",
                   help="put the figures of archives written by --pack into --output and rebuild its gallery; makes no "
                        "figure. An archive is taken only whole as --pack wrote it (each file's sha256 as its "
                        "manifest and the figure's record keep them), and its files go only where --output has none "
                        "of them, the same ones, or that figure's files exactly as sgi-figures wrote them (their "
                        "sha256 as its record keeps them); anything else is refused, before any file is written")
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


# Inside each --pack archive, beside the figure's files: the sha256 of each, which --unpack checks.
MANIFEST = "sgi-figures-manifest.json"
# A member names <paper>/<file>, as in an output directory: no path that leaves it, no hidden file.
_MEMBER = re.compile(r"[\w-][\w.-]*/[\w-][\w.-]*")


def archive_path(pack_dir, exp) -> Path:
    """Where ``--pack`` writes a figure's archive."""
    return Path(pack_dir) / f"{exp.paper}-{exp.figure}.tar.gz"


def pack(files: dict[str, Path], archive: Path) -> Path:
    """One figure's files as ``archive`` (tar.gz), named ``<paper>/<file>`` inside as in an output directory, with
    ``MANIFEST``: the sha256 of each. Written whole (``check_pack`` refused, before any compute, an archive there
    that ``pack`` did not write)."""
    members = {f"{path.parent.name}/{path.name}": path.read_bytes() for path in files.values()}
    manifest = {"written_by": "sgi-figures --pack",
                "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}}
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name, data in {MANIFEST: json.dumps(manifest, indent=1).encode(), **members}.items():
            member = tarfile.TarInfo(name)
            member.size, member.mode, member.mtime = len(data), 0o644, int(time.time())
            tar.addfile(member, io.BytesIO(data))
    store.write_bytes_atomically(archive, packed.getvalue())
    return archive


def read_pack(archive, key: str = "--unpack") -> tuple[str, dict, dict[str, bytes]]:
    """(paper, record, the figure's files by name) of an archive ``pack`` wrote, whole: every member a plain file
    ``<paper>/<file>`` of one figure, listed in its manifest with its sha256, and the figure's files as its record
    keeps them (``records.figure_fault``). Anything else is refused in one line naming ``key``."""
    def refused(why: str) -> ConfigError:
        return ConfigError(key, str(archive), f"an archive sgi-figures --pack wrote ({why})")

    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = {}
            for member in tar:
                if not member.isfile() or member.name in members:
                    raise refused(f"{member.name} is not one plain file")
                members[member.name] = tar.extractfile(member).read()
    except (OSError, EOFError, zlib.error, tarfile.TarError) as err:
        raise refused(str(err)) from None
    if MANIFEST not in members:
        raise refused(f"it has no {MANIFEST}")
    try:
        digests = json.loads(members.pop(MANIFEST))["sha256"]
        listed = set(digests)
    except (ValueError, KeyError, TypeError):
        raise refused(f"its {MANIFEST} lists no sha256 of its files") from None
    unlisted = sorted(listed ^ set(members))
    if unlisted:
        raise refused(f"{unlisted[0]} is " + ("missing, though its manifest lists it" if unlisted[0] in listed
                                               else "not in its manifest"))
    for name, data in members.items():
        if not _MEMBER.fullmatch(name):
            raise refused(f"{name} is no <paper>/<file> of an output directory")
        if hashlib.sha256(data).hexdigest() != digests[name]:
            raise refused(f"{name} differs from its manifest's sha256")
    papers, record_names = {name.split("/")[0] for name in members}, [name for name in members if name.endswith(".json")]
    if len(papers) != 1 or len(record_names) != 1:
        raise refused("not one figure's files: one <paper>/ directory holding one record")
    [paper], files = papers, {name.split("/")[1]: data for name, data in members.items()}
    try:
        record = json.loads(members[record_names[0]])
    except ValueError as err:
        raise refused(f"{record_names[0]} is no record ({err})") from None
    fault = records.figure_fault(record if isinstance(record, dict) else {}, files.get, paper)
    if fault is None and (record.get("paper") != paper or set(files) != set(record["files"].values())):
        fault = f"{record_names[0]} lists other files than the archive holds"
    if fault:
        raise refused(fault)
    return paper, record, files


def _replaces_what_it_does_not_own(output: Path, paper: str, record: dict, files: dict[str, bytes]) -> str | None:
    """Why unpacking a figure's ``files`` into ``output`` is refused, naming the file (None when it is not): it
    would replace a file that is not this figure's, exactly as sgi-figures wrote it (the figure's record there and
    its digests match). A file that is absent, or already the same, may always be written."""
    directory = output / paper
    present = records.files_in(directory)
    replaced = [directory / name for name, data in files.items()
                if (directory / name).is_symlink() or ((directory / name).exists() and present(name) != data)]
    if not replaced:
        return None
    try:
        own = records.read_record(directory / record["files"]["json"])
    except (OSError, ValueError):
        return f"{replaced[0]} would be replaced, and no record sgi-figures wrote lists it"
    fault = records.figure_fault(own, present, directory)
    return f"{replaced[0]} would be replaced, and {fault}" if fault else None


def unpack(archives: list[str], output: Path) -> list[str]:
    """Write the figures of ``--pack`` archives into ``output``; the files written. Every archive is checked
    (``read_pack``) and where its files go (only over that figure's own files: ``_replaces_what_it_does_not_own``)
    before the first file is written; a figure's files are then written whole, its record last."""
    figures = {}
    for name in archives:
        paper, record, files = read_pack(name)
        where = (paper, record["files"]["json"])
        if where in figures:
            raise ConfigError("--unpack", name, f"one archive per figure ({'/'.join(where)} is also in "
                              f"{figures[where][0]})")
        fault = _replaces_what_it_does_not_own(output, paper, record, files)
        require("--unpack", name, fault is None, "an archive whose figure replaces only files sgi-figures wrote in "
                f"--output ({fault}; move them away to unpack it)")
        figures[where] = (name, files)
    written = []
    for (paper, record_name), (_, files) in figures.items():
        record_last = sorted(files, key=lambda file: file == record_name)
        with records.staged({file: output / paper / file for file in record_last}) as stage:
            for file, path in stage.items():
                path.write_bytes(files[file])
        written += [f"{paper}/{file}" for file in record_last]
    return written


def check_pack(pack_dir: str, archives: list[Path]) -> None:
    """Refuse (one line, before any compute) a ``--pack`` directory that is no path or cannot be written, or
    that holds a file under an archive's name that ``pack`` did not write: an archive is only replaced by its
    figure's next one."""
    require("--pack", pack_dir, pack_dir.strip() != "", "a directory (a non-empty path)")
    cache.check_writable(Path(pack_dir), "--pack", pack_dir)
    for archive in archives:
        if archive.exists() or archive.is_symlink():
            try:
                read_pack(archive, "--pack")
            except ConfigError as err:
                raise ConfigError("--pack", pack_dir, f"a directory whose {archive.name}, if any, is {err.allowed}; "
                                  "move it away") from None


def chosen_figures(experiments_dirs: list[str], only: list[str] | None):
    """(the figures to make, those the gallery lists): every figure --only names among the built-in papers' and
    the user's directories; without --only, every figure of the user's directories where any is named, else every
    built-in one. Two files of one paper/figure id anywhere are refused (``experiment.discover``)."""
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
    from sgi_run.figures import gallery
    from sgi_run.runner import WriteFailed
    from sgi_run.terminal import console as make_console

    try:
        args = _parser().parse_args(argv)
    except ConfigError as err:
        return _refuse(err)
    except SystemExit as stop:      # --help (0), or one of argparse's own refusals (2): a status, as every outcome
        return stop.code
    console = make_console()

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

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
            cache.check_writable(Path(args.output), "--output", args.output)
            members = unpack(args.unpack, Path(args.output))
        except ConfigError as err:
            return _refuse(err)
        except OSError as err:
            if err.errno not in WriteFailed.ERRNOS:
                raise
            print(f"sgi-figures: error: cannot write {err.filename or args.output} ({err.strerror}); each figure's "
                  "files there are whole, as before or as unpacked", file=sys.stderr)
            return 1
        index = gallery.build(args.output, listed, gallery.PAPER_RESULTS)
        console.print(f"unpacked {len(members)} files into {args.output}; gallery: {index}")
        return 0
    command = shlex.join(["sgi-figures", *(sys.argv[1:] if argv is None else argv)])
    try:
        where = [f"executor={args.executor}"] + [f"executor.{o}" for o in args.executor_option]
        configs = ConfigSource(added=args.config_dir)
        # Every figure's runs are validated before the first computes (each run then uses the BuiltConfig built here).
        composed = [pipeline.compose_run_setups(exp, args.fidelity, args.runs_root, args.cache, where, configs)
                    for exp in experiments]
        for key, directory in (("--runs-root", args.runs_root), ("--output", args.output)):
            cache.check_writable(Path(directory), key, directory)
        if args.pack is not None:
            check_pack(args.pack, [archive_path(args.pack, exp) for exp in experiments])
        outcomes = []
        for exp, runs in zip(experiments, composed):
            started = time.perf_counter()
            console.print(f"[bold]{exp.heading}[/] ({args.fidelity})", highlight=False)
            files = records.figure_files(exp, args.output)
            kept = records.kept_record(exp, args.fidelity, args.output, {i: cfg for i, (cfg, _) in runs.items()},
                                          args.cache, log=say)
            if kept is not None:
                made = kept.get("provenance", {})
                console.print(f"    kept: {files['json']} was made from these runs (commit "
                              f"{(made.get('commit') or 'unknown')[:12]}, {made.get('date_utc', 'date unknown')}, "
                              f"{made.get('device', 'device unknown')})", highlight=False)
                outcomes.append(pipeline.FigureOutcome.from_record(exp, kept, files))
            else:
                outcomes.append(pipeline.make_figure(
                    exp, args.fidelity, args.output, args.runs_root, cache=args.cache, executor=where, composed=runs,
                    log=say, command=command, source=source))
                console.print(f"    wrote {outcomes[-1].files['png']} in {time.perf_counter() - started:.0f} s")
            console.print(f"    checks: {counts_text(verdict_counts(outcomes[-1].checks))}", highlight=False)
            if args.pack is not None:
                archive = pack(files, archive_path(args.pack, exp))
                console.print(f"    packed {archive}")
    except ConfigError as err:
        return _refuse(err)
    except WriteFailed as err:          # a run's directory: its finished shards are kept
        print(f"sgi-figures: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:              # a figure's own files (png, table, record) in --output
        if err.errno not in WriteFailed.ERRNOS:
            raise
        print(f"sgi-figures: error: cannot write {err.filename or args.output} ({err.strerror}); the figure's files "
              "there are as they were, finished runs are kept, the same command goes on from them", file=sys.stderr)
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
