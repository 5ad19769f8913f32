"""``index.html``: every paper figure, in the papers' order (``figure_order``), with its status (kept at the
paper's counts, computed at another fidelity, needs a GPU, not computed), whether its record is stale, a
thumbnail of it beside its paper caption, and its table and verdicts folded away; ``README.md``: the same
statuses with verdicts, wall time, device and commit. Rebuilt from the ``<paper>/<figure>.json`` records and
the experiment files, so it shows whatever figures exist, from whichever runs made them, and those that do
not. The figures computed at the papers' counts are kept in the repository in ``gallery/paper``
(``PAPER_RESULTS``); another gallery links them."""
from __future__ import annotations

import html
import math
import os
import re
from pathlib import Path

import yaml

from sgi_run.core.errors import require
from sgi_run.figures.results import BY_CONSTRUCTION, CheckResult, counts_text, verdict_counts
from sgi_run.figures.experiment import figure_command, figure_order
from sgi_run.figures.records import read_record, stale_reasons
from sgi_run.figures.tables import (DISAGREES, RELATIVE_SE_TEXT, RUN_COLUMNS_FROM, STUDY_MD_HEADER,
                                    disagreement_checks, markdown_table, md_cells, md_header, study_md_rows,
                                    table_parts, work_precision_header, work_precision_md_rows)
from sgi_run.store import write_text_atomically

PAPER_RESULTS = Path("gallery/paper")

# A figure needs a GPU at the paper's counts where those are more path-steps than this: a CPU's hours.
GPU_PATH_STEPS = 1e10

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1400px; color: #222; }
.figure { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.figure img { width: 100%; max-height: 340px; object-fit: contain; object-position: left top; border: 1px solid #ccc; }
.figure > a { flex: 0 1 520px; min-width: 0; }
.stale { padding: 0.4em 0.6em; background: #fde8e8; border-left: 4px solid #c62828; }
.status td, .status th { text-align: left; } .status td.verdicts { white-space: nowrap; } details { margin: 0.5em 0 1.5em; } summary { cursor: pointer; }
h3.paper { margin-top: 1.5em; } section { border-top: 1px solid #ddd; margin-top: 1.5em; }
.files, .command { font-size: 0.85em; overflow-wrap: anywhere; } .command code { white-space: pre-wrap; }
.wide { overflow-x: auto; max-width: 100%; } ul.checks { overflow-wrap: anywhere; }
.caption { max-width: 560px; font-size: 0.95em; }
.fidelity { padding: 0.4em 0.6em; background: #fff6d5; border-left: 4px solid #e0b000; }
.fidelity.paper { background: #e6f4e6; border-color: #3a3; }
.disagrees { padding: 0.2em 0.6em; background: #fdecea; border-left: 4px solid #b00; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
td:first-child { text-align: left; }
.PASS { color: #161; font-weight: bold; } .FAIL { color: #b00; font-weight: bold; } .SKIP { color: #888; }
ul.checks { font-family: monospace; font-size: 0.85em; }
"""


def records(output_dir: Path) -> list[dict]:
    """The figure records in ``output_dir`` (``<paper>/<figure>.json``), in the papers' order; ``_dir`` is each
    one's paper directory. A JSON file that is no figure record is left out."""
    found = []
    for path in sorted(output_dir.glob("*/*.json"), key=figure_order):
        try:
            record = read_record(path)
        except (OSError, ValueError):       # no JSON object
            continue
        if {"paper", "figure", "checks", "files"} <= record.keys():
            record["_dir"] = path.parent.name
            found.append(record)
    return found


def describe(profile: dict) -> str:
    """A fidelity profile's overrides, then its runs' own."""
    text = ", ".join(profile["overrides"])
    extra = "; ".join(f"{run}: {', '.join(o)}" for run, o in profile["runs"].items())
    return text + (f" ({extra})" if extra else "")


def _fidelity_note(r: dict, paper_result: str | None = None) -> str:
    used = r["fidelity_overrides"][r["fidelity"]]
    made = _made_text(r)
    if at_papers_counts(r):
        profile = "" if r["fidelity"] == "paper" else f" (its {r['fidelity']} profile is the paper's)"
        return (f'<p class="fidelity paper">At the paper\'s counts{profile}: {html.escape(describe(used))}.'
                f"{made}</p>")
    paper = r["fidelity_overrides"].get("paper")
    versus = f" The paper's counts: {html.escape(describe(paper))}." if paper else ""
    if paper_result:
        versus += f' <a href="{html.escape(paper_result)}">The figure at the paper\'s counts</a>.'
    else:
        versus += " Not yet computed at the paper's counts."
    return (f'<p class="fidelity">Run at <b>{r["fidelity"]}</b> fidelity, not the paper\'s counts: '
            f"{html.escape(describe(used))}.{versus}{made}</p>")


def _made_text(r: dict) -> str:
    """Who made the figure's numbers: the commit, device, date and the runs' compute time (records before
    provenance was kept say nothing)."""
    made = r.get("provenance")
    if not made:
        return ""
    commit = (made.get("commit") or "unknown")[:12]
    return html.escape(f" Computed by sgi-run {commit} on {', '.join(made['runs_computed_on']) or made['device']}, "
                       f"{made['date_utc'][:10]}; its runs took {made['compute_wall_time_s']:.0f} s.")


def at_papers_counts(r: dict) -> bool:
    """The record's figure was computed at the paper's counts: the paper profile, or one with the same counts."""
    return r["fidelity"] == "paper" or bool(r.get("papers_counts"))


def heading(r: dict) -> tuple[str, str]:
    """(label, heading) of a figure record: "Kraus & Tyranowski (2021), Figure 4.1" and that with the
    title. Records written before figures had names fall back to their paper and figure ids."""
    label = r.get("label") or f"{r['paper']} {r['figure']}"
    return label, r.get("heading") or f"{label}: {r['title']}"


def _table_html(header: list[str], cells: list[list[str]], at: int | None = None) -> str:
    e = html.escape
    out = ""
    for part_header, part_cells in table_parts(header, cells, at):
        rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in part_cells)
        # In a container of its own that scrolls sideways: a wide table never widens the page (800 px windows).
        out += ('<div class="wide"><table><tr>' + "".join(f"<th>{e(h)}</th>" for h in part_header)
                + f"</tr>{rows}</table></div>")
    return out


# TeX a caption writes as $...$, as plain text: the symbols the captions use, sub- and superscripts as HTML.
_TEX_SYMBOLS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
                "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ",
                "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ",
                "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π",
                "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω", "approx": "≈", "cdot": "·", "times": "×",
                "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "pm": "±", "infty": "∞",
                "sqrt": "√", "partial": "∂", "nabla": "∇", "sum": "Σ", "int": "∫", "in": "∈", "to": "→",
                "rightarrow": "→", "mapsto": "↦", "langle": "⟨", "rangle": "⟩", "ldots": "…", "dots": "…",
                "propto": "∝", "sim": "∼", "circ": "∘", "wedge": "∧", "hat": "", "tilde": "", "bar": "", "quad": " ",
                "mathrm": "", "mathbf": "", "mathcal": "", "mathit": "", "boldsymbol": "", "text": "",
                "operatorname": "", "left": "", "right": "", "big": "", "Big": "",
                ",": " ", ";": " ", "!": "", " ": " ", "|": "‖", "{": "{", "}": "}"}
_TEX_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
_TEX_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|([^\s{}]))")


def tex_text(text: str) -> str:
    """A caption as HTML without TeX: its ``$...$`` as symbols (``$\\nu = 0.01$`` -> ν = 0.01, ``$E_0$`` ->
    E<sub>0</sub>), any other command by its name; the rest escaped. The index loads no math renderer."""
    parts = re.split(r"(\$[^$]+\$)", str(text).replace("\n", " "))
    out = []
    for i, part in enumerate(parts):
        if not i % 2:
            out.append(html.escape(part))
            continue
        math_text = _TEX_COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), part[1:-1])
        math_text = html.escape(math_text, quote=False)
        math_text = _TEX_SCRIPT.sub(lambda m: f"<{'sub' if m.group(1) == '_' else 'sup'}>{m.group(2) or m.group(3)}"
                                              f"</{'sub' if m.group(1) == '_' else 'sup'}>", math_text)
        out.append(math_text.replace("{", "").replace("}", ""))
    return "".join(out)


def _override(overrides: list[str], key: str):
    value = None
    for override in overrides:
        name, _, text = override.partition("=")
        value = yaml.safe_load(text) if name.lstrip("+") == key else value
    return value


def paper_path_steps(exp) -> float | None:
    """The path-steps of the figure's runs at the paper's counts, from its experiment file alone (no config is
    composed: the index is rebuilt after every figure): paths x steps of each run, a convergence study's every
    step size and its fine reference. None where the file does not give a run's paths, T and step size."""
    if "paper" not in exp.fidelity:
        return None
    total = 0.0
    for run_id in exp.runs:
        overrides = exp.overrides(run_id, "paper")
        paths, T, dt, dts = (_override(overrides, k) for k in ("plan.paths", "plan.T", "plan.dt", "plan.dts"))
        if not isinstance(paths, int) or not isinstance(T, (int, float)) or not (dt or dts):
            return None
        if dts:
            refine = _override(overrides, "plan.reference_refine") or 8
            total += paths * (sum(math.ceil(T / d - 1e-9) for d in dts) + math.ceil(T * refine / min(dts) - 1e-9))
        else:
            total += paths * math.ceil(T / dt - 1e-9)
    return total


def status(r: dict | None, exp=None, paper_result: str | None = None) -> tuple[str, list[str]]:
    """(the figure's status in words, why its record is stale: empty where it is current). A figure with no
    record needs a GPU where its paper's counts are over ``GPU_PATH_STEPS`` path-steps."""
    if r is None:
        if paper_result:
            return "not computed here; kept at the paper's counts in the repository", []
        if exp is not None and exp.at_papers_counts("reduced"):
            return "not computed (its reduced profile has the paper's counts: a CPU computes it)", []
        steps = paper_path_steps(exp) if exp is not None else None
        if steps is not None and steps > GPU_PATH_STEPS:
            return f"needs a GPU: not computed ({steps:.2g} path-steps at the paper's counts)", []
        return "not computed", []
    made = r.get("provenance") or {}
    on = " on a GPU" if "gpu" in made.get("device", "").lower() else ""
    text = (f"kept at the paper's counts{on}" if at_papers_counts(r)
            else f"computed at {r['fidelity']} fidelity, not the paper's counts{on}")
    return text, stale_reasons(r, exp)


def _stale_html(reasons: list[str]) -> str:
    if not reasons:
        return ""
    return (f'<p class="stale"><b>Stale record</b>: {html.escape("; ".join(reasons))}. Drawn again by '
            "<code>sgi-figures</code> from a clean commit, it would show what this checkout computes.</p>")


def _apart(check: dict) -> str:
    """" (by construction)" after the verdict of a check that holds by how its run is set up."""
    return f" ({BY_CONSTRUCTION})" if check.get("by_construction") else ""


def _disagreements_html(r: dict) -> str:
    """The figure's disagreements with its paper, short: the claim, where, what is measured with the named
    checks' computed values, and the explanation (records written before them have none)."""
    e = html.escape
    items = []
    for entry in r.get("disagreements") or []:
        values = "; ".join(f'{e(c["id"])} [{e(c["run"])}]: {e(CheckResult.from_record(c).measured())} '
                           f'<span class="{c["verdict"]}">{c["verdict"]}</span>'
                           for c in disagreement_checks(entry, r["checks"]))
        items.append(f"<li>The paper ({e(entry['where'])}): “{e(entry['claim'])}” <b>Measured here:</b> "
                     f"{e(entry['finding'])} <small>({values})</small> <b>Explanation:</b> "
                     f"{e(entry['explanation'])}</li>")
    return f'<div class="disagrees"><p><b>{DISAGREES}:</b></p><ul>{"".join(items)}</ul></div>' if items else ""


def _figure_html(r: dict | None, exp=None, paper_result: str | None = None) -> str:
    """A figure's section: its status, stale warning, thumbnail (loaded when scrolled to, a link to the full
    figure) beside its caption, then its tables and checks folded in a <details>. A figure with no record: its
    status and caption."""
    e = html.escape
    paper, figure = (r["paper"], r["figure"]) if r is not None else (exp.paper, exp.figure)
    text, reasons = status(r, exp, paper_result)
    if r is None:
        link = f' <a href="{e(paper_result)}">The figure at the paper\'s counts</a>.' if paper_result else ""
        caption = "Caption (not a figure of the paper)" if exp.diagnostic else "Paper caption"
        return f"""
<section id="{e(paper)}-{e(figure)}">
<h2>{e(exp.heading)}</h2>
<p class="fidelity"><b>Status:</b> {e(text)}.{link} Made by <code>{e(figure_command_text(exp))}</code>.</p>
<div class="caption"><p><b>{caption}</b> ({e(exp.source)}):</p><p>{tex_text(exp.caption)}</p></div>
</section>"""
    studies = r.get("convergence", [])     # records written before convergence studies have none
    precision = r.get("work_precision", [])      # records written before work-precision figures have none
    tables = (_table_html(md_header(r.get("observable", "H"), r["table"]), [md_cells(row) for row in r["table"]],
                          RUN_COLUMNS_FROM)
              + _table_html(STUDY_MD_HEADER, study_md_rows(studies))
              + _table_html(work_precision_header(precision), work_precision_md_rows(precision)))
    if r["table"]:
        tables = f"<p><small>{e(RELATIVE_SE_TEXT)}</small></p>" + tables
    checks = "".join(
        f'<li><span class="{c["verdict"]}">{c["verdict"]}</span>{_apart(c)} {e(c["id"])} [{e(c["run"])}]: '
        f"{e(CheckResult.from_record(c).measured())}<br><small>{e(c['criterion'])}</small></li>" for c in r["checks"])
    summary = _summary(r)
    runs = "; ".join(dict.fromkeys(row["label"] for row in r["table"] + studies))
    note = f"<p>{tex_text(r['note'])}</p>" if r.get("note") else ""
    label, title = heading(r)
    caption = "Caption (not a figure of the paper)" if r.get("diagnostic") else "The paper's caption"
    # The paper's words and citation from the experiment file where there is one (a stale record's may be older).
    words, citation = (exp.caption, exp.source) if exp is not None else (r["caption"], r.get("source", ""))
    files = " · ".join(f'<a href="{e(r["_dir"])}/{e(name)}">{e(name)}</a>' for name in r["files"].values())
    png = f'{e(r["_dir"])}/{e(r["files"]["png"])}'
    return f"""
<section id="{e(paper)}-{e(figure)}">
<h2>{e(title)}</h2>
<p><b>Status:</b> {e(text)}. Checks: {summary}</p>
{_stale_html(reasons)}
{_fidelity_note(r, paper_result)}
<div class="figure">
  <a href="{png}" title="the figure at full size"><img src="{png}" alt="{e(label)}" loading="lazy"></a>
  <div class="caption"><p><b>{caption}</b> ({e(citation)}):</p><p>{tex_text(words)}</p>
  <p><b>Runs drawn here:</b> {e(runs)}.</p>{note}{_disagreements_html(r)}</div>
</div>
<details><summary>Its table, checks, command and files</summary>
<p>Bands and ± values are Monte Carlo standard errors (SE).</p>
{tables}
<p class="command">Made by: <code>{e((r.get("provenance") or {}).get("command") or "")}</code></p>
<p class="files">Files: {files}</p>
<ul class="checks">{checks}</ul>
</details>
</section>"""


def figure_command_text(exp) -> str:
    """The command that makes a figure not computed here: at the paper's counts where it has them."""
    return figure_command(exp.paper, exp.figure, "paper" if "paper" in exp.fidelity else "reduced")


def _summary(r: dict) -> str:
    counts = verdict_counts(r["checks"])
    summary = ", ".join(f'<span class="{v}">{counts[v]} {v}</span>' for v in ("PASS", "FAIL", "SKIP") if counts[v])
    return summary + (f"; {counts[BY_CONSTRUCTION]} {BY_CONSTRUCTION}" if counts[BY_CONSTRUCTION] else "")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def listing(records: list[dict], experiments=(), diagnostics: bool = True) -> list[tuple[str, str, dict | None, object]]:
    """Every figure to list, in the papers' order (``figure_order``): (paper, figure, its record or None, its
    experiment or None) for each of ``experiments`` and each record whose experiment is not among them. A
    diagnostic (no figure of a paper) only where it has a record, and none unless ``diagnostics``."""
    found = {(r["paper"], r["figure"]): r for r in records}
    known = {(e.paper, e.figure): e for e in experiments}
    keys = sorted(set(found) | set(known), key=lambda k: figure_order(Path(k[0]) / k[1]))
    rows = [(p, f, found.get((p, f)), known.get((p, f))) for p, f in keys]
    def diagnostic(r, exp):
        return r.get("diagnostic", False) if r is not None else exp.diagnostic
    return [(p, f, r, exp) for p, f, r, exp in rows if not diagnostic(r, exp) or (diagnostics and r is not None)]


def status_table(records: list[dict], experiments=(), links: dict | None = None) -> str:
    """``README.md`` of an output directory: one row per paper figure (every one of ``experiments``, each record
    found otherwise), in the papers' order: its status (``status``: kept at the paper's counts, computed at another
    fidelity, needs a GPU, not computed), whether its record is stale and why, its verdicts, wall time, device,
    date and commit."""
    rows = []
    for paper, figure, r, exp in listing(records, experiments, diagnostics=False):
        text, reasons = status(r, exp, (links or {}).get((paper, figure)))
        if r is None:
            counts = describe(exp.fidelity["paper"]) if "paper" in exp.fidelity else ""
            rows.append([exp.label, text, "", "", "", "", "", "", counts])
            continue
        made = r.get("provenance", {})
        link = f"[{heading(r)[0]}]({paper}/{figure}.png)"
        rows.append([link, text, "stale: " + "; ".join(reasons) if reasons else "current",
                     counts_text(verdict_counts(r["checks"])),
                     f"{made['compute_wall_time_s']:.0f}" if "compute_wall_time_s" in made else "",
                     made.get("device", ""), made.get("date_utc", "")[:10], (made.get("commit") or "")[:12], ""])
    header = ["figure", "status", "record", "verdicts", "runs' wall s", "device", "date", "commit",
              "the paper's counts (where not computed)"]
    lines = markdown_table(header, rows, _cell)     # the header's texts hold no "|" and no newline
    return "\n".join(lines) + "\n"


def _paper_results(output_dir: Path, paper_results) -> dict:
    """(paper, figure) -> the link, relative to ``output_dir``, of that figure's record at the paper's counts in
    ``paper_results`` (e.g. ``gallery/paper``, the ones kept in the repository)."""
    if paper_results is None or not Path(paper_results).is_dir() or Path(paper_results).resolve() == output_dir.resolve():
        return {}
    index = os.path.relpath(Path(paper_results).resolve() / "index.html", output_dir.resolve())
    return {(r["paper"], r["figure"]): f"{index}#{r['paper']}-{r['figure']}"
            for r in records(Path(paper_results)) if at_papers_counts(r)}


# The two files the gallery writes at the top of an output directory, and how each begins: how sgi-figures knows
# a file it wrote from a user's (a README.md of their own in --output . is never replaced).
OWN_FILES = {"README.md": "# Paper figures in this directory\n",
             "index.html": "<!doctype html>\n<html><head><meta charset='utf-8'><title>sgi-run figures</title>"}


def check_owned(output_dir, key: str = "--output") -> None:
    """Refuse (one line) an output directory that is no path, or whose ``README.md`` or ``index.html``
    sgi-figures did not write: ``build`` replaces those two files."""
    text = str(output_dir)
    require(key, text, text.strip() != "", "a directory (a non-empty path)")
    for name, start in OWN_FILES.items():
        path = Path(output_dir) / name
        if path.exists() or path.is_symlink():
            ours = path.is_file() and not path.is_symlink() and path.read_bytes().startswith(start.encode())
            require(key, text, ours, f"a directory sgi-figures owns: its {name} was not written by sgi-figures "
                    "(name a new or empty directory, e.g. outputs/figures)")


def build(output_dir, experiments=(), paper_results=None) -> Path:
    """Write ``<output_dir>/index.html`` from the figure records there, and ``README.md``: the status of every
    figure (``status_table``; ``experiments``: the figures to list even where no record exists); a figure not at
    the paper's counts links its record in ``paper_results`` where one is at them. Returns the index's path."""
    check_owned(output_dir)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    found = records(output_dir)
    links = _paper_results(output_dir, paper_results)
    write_text_atomically(output_dir / "README.md",
        OWN_FILES["README.md"] + "\nWritten by `sgi-figures` from each figure's record "
        "(`<paper>/<figure>.json`: its table, checks and provenance) and the experiment files, every paper figure in "
        "the papers' order. Status: kept at the paper's counts (on a GPU where its device is one), computed at "
        f"another fidelity, needs a GPU (not computed, and over {GPU_PATH_STEPS:.0e} path-steps at the paper's "
        "counts), or not computed. Record: stale where its experiment file or the numerics code changed after it "
        "was drawn, or it was drawn from uncommitted code; `sgi-figures` from a clean commit draws it again. "
        "\"Runs' wall s\" is the sum of the runs' own wall times as they were computed (compilation included).\n\n"
        + status_table(found, experiments, links))
    listed = listing(found, experiments)
    e = html.escape
    body = "".join(_figure_html(r, exp, links.get((p, f))) for p, f, r, exp in listed)
    body = body or "<p>No figures yet: run <code>sgi-figures</code>.</p>"
    toc, paper = "", None
    for p, f, r, exp in listed:
        if p != paper:
            name = (r or {}).get("paper_name") or getattr(exp, "paper_name", "") or p
            toc += ("</table>" if paper else "") + f'<h3 class="paper">{e(name)}</h3><table class="status">'
            paper = p
        text, reasons = status(r, exp, links.get((p, f)))
        # The paper is the table's heading: a row names the figure and its title.
        name, title = ((r.get("name") or f, r["title"]) if r is not None else (exp.name or f, exp.title))
        toc += (f'<tr><td><a href="#{e(p)}-{e(f)}">{e(name)}</a>: {e(title)}</td><td>{e(text)}'
                f'{"; <b>stale record</b>" if reasons else ""}</td><td class="verdicts">{_summary(r) if r else ""}'
                "</td></tr>")
    toc += "</table>" if paper else ""
    page = (OWN_FILES["index.html"] + f"<style>{_STYLE}</style></head><body>\n<h1>sgi-run: paper figures</h1>\n"
            f"<p>Every paper figure, in the papers' order, with its status; each figure's table, checks and files "
            f"are folded under it. Bands and ± values are Monte Carlo standard errors (SE). A check's margin says "
            f"how many SE its value lies inside (+) or outside (−) the acceptance band. A quick view of this "
            f"directory, its captions' mathematics as plain text: <code>make docs</code> builds the documentation "
            f"site, where each figure has its page with the mathematics rendered.</p>{toc}{body}\n</body></html>\n")
    index = output_dir / "index.html"
    write_text_atomically(index, page)
    return index
