"""A figure's provenance record (``<fig>.json``): what it holds (``figure_record``, ``figure_provenance``), writing
and reading it as strict JSON, sealing the figure's files with their digests and finding a fault in them
(``seal``, ``figure_fault``), staging the files so they replace the old ones together, and whether a record
already written can be kept (``kept_record``, ``stale_reasons``).
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from collections.abc import Callable

import numpy as np
import yaml

from sgi_run.version import __version__
from sgi_run.config import config_hash
from sgi_run.figures.experiment import Experiment, figure_command
from sgi_run.figures.results import CheckResult, verdict_counts

def figure_record(exp: Experiment, fidelity: str, table: list[dict], studies: list[dict], precision: list[dict],
            verdicts: list[CheckResult], files: dict[str, Path], configs: dict, results: dict,
            provenance: dict) -> dict:
    """The figure's record: what the gallery shows of it, and what it was made from (``kept_record``)."""
    return {"paper": exp.paper, "figure": exp.figure, "title": exp.title, "paper_name": exp.paper_name,
            "name": exp.name, "label": exp.label, "heading": exp.heading, "diagnostic": exp.diagnostic,
            "caption": exp.caption,
            "source": exp.source, "note": exp.note, "observable": exp.observable, "fidelity": fidelity,
            "fidelity_overrides": {name: {"overrides": list(p["overrides"]),
                                          "runs": {r: list(v) for r, v in p["runs"].items()}}
                                   for name, p in exp.fidelity.items()},
            "table": table, "convergence": studies, "work_precision": precision,
            "checks": [v.as_dict() for v in verdicts],
            "disagreements": [dict(entry) for entry in exp.disagreements],
            "verdicts": verdict_counts(verdicts),
            "files": {k: p.name for k, p in files.items()}, "sgi_run_version": __version__,
            "papers_counts": exp.at_papers_counts(fidelity),
            "run_config_hashes": {run_id: config_hash(cfg) for run_id, cfg in configs.items()},
            "run_code": run_code(configs, results),
            "experiment_digest": experiment_digest(exp), "provenance": provenance}


def run_code(configs: dict, results: dict) -> dict:
    """Each run's numerics code as its file says (the ``code_digest`` its run wrote: a run reused from the cache
    names the code that computed it, not today's), with the names that find its classes again, so that an edit of
    one system's code marks stale the figures of its runs alone (``code_changed``)."""
    return {run_id: {"system": cfg.system.name, "integrator_family": cfg.integrator.family,
                     "code_digest": results[run_id].statistics.attrs.get("code_digest")}
            for run_id, cfg in configs.items()}


def code_changed(record: dict) -> bool:
    """Whether the record's runs were not all computed by today's numerics code: a run's code digest
    (``run_code``) is not today's, or its classes are not registered in this process. A record without
    ``run_code`` (drawn before it was kept) counts as changed unless no numerics code changed at all
    (``provenance.numerics_code``)."""
    from sgi_run.provenance import code_digest
    from sgi_run.runner import code_digest_of

    runs = record.get("run_code")
    if not isinstance(runs, dict) or not runs:
        return (record.get("provenance") or {}).get("numerics_code") != code_digest()
    for entry in runs.values():
        try:
            if code_digest_of(entry["system"], entry["integrator_family"]) != entry["code_digest"]:
                return True
        except (KeyError, TypeError):     # a class of one's own not registered here: the whole code as a guide
            if (record.get("provenance") or {}).get("numerics_code") != code_digest():
                return True
    return False


def figure_provenance(exp: Experiment, fidelity: str, results: dict, wall_time_s: float, command: str | None,
                source: dict | None = None) -> dict:
    """What made the figure's numbers: the sgi-run commit, the numerics code, the device, JAX, when, the command;
    ``compute_wall_time_s``: the runs' own wall times as computed (a cached run's from when it ran), so a figure
    made from runs of several sessions still says what it cost."""
    import jax

    from sgi_run.engine import device
    from sgi_run.provenance import code_digest, source_commit

    computed_on = sorted({str(r.statistics.attrs.get("device", "")) for r in results.values()} - {""})
    return {**(source or source_commit()), "numerics_code": code_digest(), "device": device.describe(),
            "runs_computed_on": computed_on, "jax_version": jax.__version__,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "wall_time_s": round(wall_time_s, 1),
            "compute_wall_time_s": round(sum(float(r.statistics.attrs.get("wall_time_s", 0.0))
                                             for r in results.values()), 1),
            "cached_runs": sum(bool(r.cached) for r in results.values()), "runs": len(results),
            "command": command or figure_command(exp.paper, exp.figure, fidelity)}


def figure_files(exp: Experiment, output_dir) -> dict[str, Path]:
    """The files ``make_figure`` writes for a figure: its image (PNG, and PDF and SVG for print), table (csv, md),
    verdicts and JSON record."""
    out = Path(output_dir) / exp.paper
    return {"png": out / f"{exp.figure}.png", "pdf": out / f"{exp.figure}.pdf", "svg": out / f"{exp.figure}.svg",
            "csv": out / f"{exp.figure}.csv", "md": out / f"{exp.figure}.md",
            "checks": out / f"{exp.figure}_checks.md", "json": out / f"{exp.figure}.json"}


def experiment_digest(exp: Experiment) -> str:
    """A digest of the experiment file's content (its YAML as data: comments and layout aside): its panels, checks,
    bands, captions."""
    data = yaml.safe_load(exp.path.read_text())
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def stale_reasons(record: dict, exp: Experiment | None) -> list[str]:
    """Why a figure's record no longer shows what today's checkout would draw, in words (empty: it is current):
    its experiment file was edited since (``experiment_digest``, the same test ``kept_record`` makes), the
    numerics code of its runs changed since (``code_changed``), or it was drawn from uncommitted code (no commit
    names what drew it). ``exp``: the figure's experiment today (None: not known here, so not compared)."""
    made = record.get("provenance") or {}
    reasons = []
    if exp is not None and record.get("experiment_digest") != experiment_digest(exp):
        reasons.append("its experiment file was changed after it was drawn")
    if code_changed(record):
        reasons.append("the numerics code was changed after it was drawn")
    if made.get("uncommitted_changes"):
        reasons.append("drawn from uncommitted code")
    return reasons


def kept_record(exp: Experiment, fidelity: str, output_dir, configs: dict, cache: str,
                log: Callable[[str], None] = print) -> dict | None:
    """The figure's record already in ``output_dir`` when it was made from exactly these runs (the same config
    of every run) and exactly this experiment file (``experiment_digest``: an edited band or panel makes the figure
    again, from the cached runs), and the cache policy reuses it: ``reuse`` keeps it whatever numerics code made it
    (its provenance names the commit), ``refresh_stale`` only from today's numerics code, ``off`` never. A figure
    computed in an earlier session (a GPU window) is then not recomputed, e.g. from ``gallery/paper``. One that
    would be kept but whose files are not as sgi-figures wrote them (``figure_fault``: a file missing or changed,
    the record edited) is not trusted: it is made again, and ``log`` says why."""
    files = figure_files(exp, output_dir)
    if cache == "off" or not files["json"].exists():
        return None
    try:
        record = read_record(files["json"])
    except (OSError, ValueError) as err:
        log(f"    made again: {files['json']} cannot be read as a figure's record ({err})")
        return None
    same_runs = (record.get("run_config_hashes") == {run_id: config_hash(cfg) for run_id, cfg in configs.items()}
                 and record.get("experiment_digest") == experiment_digest(exp))
    same_code = not code_changed(record)
    if not (same_runs and record.get("fidelity") == fidelity and (same_code or cache == "reuse")):
        return None
    fault = figure_fault(record, files_in(files["json"].parent), files["json"].parent)
    if fault:
        log(f"    made again: {fault}")
        return None
    return record


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def strict_json(x):
    """``x`` with every non-finite float (NaN, ±inf: a mean over no finite paths, a run that never diverged)
    as None, numpy scalars as Python ones, tuples as lists: what strict JSON (``allow_nan=False``) can hold."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [strict_json(v) for v in x]
    return x


def write_record(path: Path, record: dict) -> None:
    """A figure's record as strict JSON: a non-finite number is null (NaN is no JSON; a strict parser, as a
    browser's, refuses the file). Readers take null as the missing or non-finite value it stood for. The record
    ends with the digest of its content (``record_digest``), which an edit made after it was written breaks."""
    content = json.loads(json.dumps(strict_json(record), default=_json_default, allow_nan=False))   # as read back
    content["record_digest"] = record_digest(content)
    path.write_text(json.dumps(content, indent=1, allow_nan=False) + "\n")


def read_record(path: Path) -> dict:
    """A figure's record (``write_record``'s, or an earlier version's, whose non-finite numbers are NaN)."""
    record = json.loads(Path(path).read_text())
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    return record


def record_digest(record: dict) -> str:
    """sha256 of a record's content as read back (keys sorted), its own digest left out."""
    content = {k: v for k, v in record.items() if k != "record_digest"}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def seal(record: dict, files: dict[str, Path]) -> dict:
    """``record`` with the sha256 of each of the figure's other files as written at ``files``: a file changed or
    cut short after it was written (a full disk, a hand) then no longer matches its record (``figure_fault``)."""
    return {**record, "file_digests": {key: hashlib.sha256(path.read_bytes()).hexdigest()
                                       for key, path in files.items() if key != "json"}}


def files_in(directory: Path) -> Callable[[str], bytes | None]:
    """The ``read`` of ``figure_fault`` for a figure's files in ``directory``."""
    def read(name: str) -> bytes | None:
        path = Path(directory) / name
        return path.read_bytes() if path.is_file() else None
    return read


def figure_fault(record: dict, read: Callable[[str], bytes | None], where) -> str | None:
    """Why a figure's files are not as sgi-figures wrote them, naming the file (None when they are): the record has
    no digests (an earlier sgi-figures wrote it) or was changed since, or a file it lists is missing or differs
    from its digest. ``read(name)``: the bytes of the figure's file ``name`` (None: there is none); ``where``: the
    place the files are named in (a directory, an archive's ``<paper>``)."""
    files = record.get("files")
    if not isinstance(files, dict) or "json" not in files:
        return f"{where} holds no figure's record"
    if "record_digest" not in record:
        return f"{where}/{files['json']} keeps no digests of its files (an earlier sgi-figures wrote it)"
    if record["record_digest"] != record_digest(record):
        return f"{where}/{files['json']} was changed after sgi-figures wrote it (its digest does not match)"
    for key, name in files.items():
        if key == "json":
            continue
        data = read(name)
        if data is None:
            return f"{where}/{name} is missing"
        if hashlib.sha256(data).hexdigest() != record.get("file_digests", {}).get(key):
            return f"{where}/{name} is not the file its record was written with (its sha256 differs)"
    return None


@contextlib.contextmanager
def staged(files: dict[str, Path]):
    """Paths of the same names in a temporary directory beside ``files`` (all in one directory) for the caller to
    write; once all are written each is renamed over its own name, in their order (a figure's record last). A
    write that fails (a full disk) leaves the files as they were, and nothing of its own."""
    directory = next(iter(files.values())).parent
    directory.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{next(iter(files.values())).stem}.", suffix=".partial", dir=directory))
    try:
        yield {key: stage / path.name for key, path in files.items()}
        for path in files.values():
            os.replace(stage / path.name, path)
    except OSError as err:
        if err.filename and Path(err.filename).parent == stage:    # the file the user knows, not its stage
            err.filename = str(directory / Path(err.filename).name)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
