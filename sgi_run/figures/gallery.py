"""``index.html``: every figure found under the output directory, beside its paper caption, with its
table, its verdicts and the fidelity it was run at; ``README.md``: every figure's status (fidelity, verdicts,
wall time, device, commit). Rebuilt from the ``<paper>/<figure>.json`` records, so it shows whatever figures
exist, from whichever runs made them. The figures computed at the papers' counts are kept in the repository
in ``gallery/paper`` (``PAPER_RESULTS``); another gallery links them."""
from __future__ import annotations

import html
import os
from pathlib import Path

from sgi_run.core.errors import require
from sgi_run.figures.results import BY_CONSTRUCTION, CheckResult, counts_text, verdict_counts
from sgi_run.figures.experiment import (DISAGREES, STUDY_MD_HEADER, disagreement_checks, figure_order, md_cells,
                                        md_header, read_record, study_md_rows, work_precision_header,
                                        work_precision_md_rows)
from sgi_run.store import write_text_atomically

PAPER_RESULTS = Path("gallery/paper")

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1400px; color: #222; }
.figure { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.figure img { width: 100%; border: 1px solid #ccc; }
.figure > a { flex: 1 1 640px; min-width: 0; }
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


def _fidelity_note(r: dict, paper_result: str | None = None) -> str:
    def describe(profile: dict) -> str:
        text = ", ".join(profile["overrides"])
        extra = "; ".join(f"{run}: {', '.join(o)}" for run, o in profile["runs"].items())
        return text + (f" ({extra})" if extra else "")

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


def fidelity_label(r: dict) -> str:
    """The fidelity a contents line names: "paper counts" where the profile's counts are the paper's."""
    return "paper counts" if at_papers_counts(r) else r["fidelity"]


def heading(r: dict) -> tuple[str, str]:
    """(label, heading) of a figure record: "Kraus & Tyranowski (2021), Figure 4.1" and that with the
    title. Records written before figures had names fall back to their paper and figure ids."""
    label = r.get("label") or f"{r['paper']} {r['figure']}"
    return label, r.get("heading") or f"{label}: {r['title']}"


def _table_html(header: list[str], cells: list[list[str]]) -> str:
    if not cells:
        return ""
    e = html.escape
    rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in cells)
    # In a container of its own that scrolls sideways: a wide table never widens the page (800 px windows).
    return ('<div class="wide"><table><tr>' + "".join(f"<th>{e(h)}</th>" for h in header)
            + f"</tr>{rows}</table></div>")


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


def _figure_html(r: dict, paper_result: str | None = None) -> str:
    e = html.escape
    studies = r.get("convergence", [])     # records written before convergence studies have none
    precision = r.get("work_precision", [])      # records written before work-precision figures have none
    tables = (_table_html(md_header(r.get("observable", "H"), r["table"]), [md_cells(row) for row in r["table"]])
              + _table_html(STUDY_MD_HEADER, study_md_rows(studies))
              + _table_html(work_precision_header(precision), work_precision_md_rows(precision)))
    checks = "".join(
        f'<li><span class="{c["verdict"]}">{c["verdict"]}</span>{_apart(c)} {e(c["id"])} [{e(c["run"])}]: '
        f"{e(CheckResult.from_record(c).measured())}<br><small>{e(c['criterion'])}</small></li>" for c in r["checks"])
    counts = verdict_counts(r["checks"])
    summary = ", ".join(f'<span class="{v}">{counts[v]} {v}</span>' for v in ("PASS", "FAIL", "SKIP") if counts[v])
    summary += f"; {counts[BY_CONSTRUCTION]} {BY_CONSTRUCTION}" if counts[BY_CONSTRUCTION] else ""
    runs = "; ".join(dict.fromkeys(row["label"] for row in r["table"] + studies))
    note = f"<p>{e(r['note'])}</p>" if r.get("note") else ""
    label, title = heading(r)
    caption = "Caption (not a figure of the paper)" if r.get("diagnostic") else "The paper's caption"
    files = " · ".join(f'<a href="{e(r["_dir"])}/{e(name)}">{e(name)}</a>' for name in r["files"].values())
    return f"""
<section id="{e(r['paper'])}-{e(r['figure'])}">
<h2>{e(title)}</h2>
{_fidelity_note(r, paper_result)}
<div class="figure">
  <a href="{e(r['_dir'])}/{e(r['files']['png'])}" title="the figure at full size"><img src="{e(r['_dir'])}/{e(r['files']['png'])}" alt="{e(label)}"></a>
  <div class="caption"><p><b>{caption}</b> ({e(r.get('source', ''))}):</p><p>{e(r['caption'])}</p>
  <p><b>Runs drawn here:</b> {e(runs)}.</p>{note}{_disagreements_html(r)}</div>
</div>
{tables}
<p class="command">Made by: <code>{e((r.get("provenance") or {}).get("command") or "")}</code></p>
<p class="files">Files: {files}</p>
<p>Checks: {summary}</p>
<ul class="checks">{checks}</ul>
</section>"""


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def status_table(records: list[dict], experiments=()) -> str:
    """``README.md`` of an output directory: one row per paper figure (every one of ``experiments``, each record
    found otherwise): the fidelity it was computed at, whether those are the paper's counts, its verdicts, wall
    time, device, date and commit. A figure with no record says so and what the paper's counts are."""
    found = {(r["paper"], r["figure"]): r for r in records}
    rows, figures = [], [(e.paper, e.figure, e) for e in experiments if not e.diagnostic]
    figures += [(r["paper"], r["figure"], None) for r in records if (r["paper"], r["figure"]) not in
                {(p, f) for p, f, _ in figures} and not r.get("diagnostic")]
    for paper, figure, exp in sorted(figures, key=lambda f: figure_order(Path(f[0]) / f[1])):
        r = found.get((paper, figure))
        if r is None:
            counts = ", ".join(exp.fidelity["paper"]["overrides"]) if "paper" in exp.fidelity else ""
            reduced = " (its reduced profile has the paper's counts)" if exp.at_papers_counts("reduced") else ""
            rows.append([exp.label, f"not computed here{reduced}", counts, "", "", "", "", ""])
            continue
        made = r.get("provenance", {})
        link = f"[{heading(r)[0]}]({paper}/{figure}.png)"
        rows.append([link, r["fidelity"], "yes" if at_papers_counts(r) else "no", counts_text(verdict_counts(r["checks"])),
                     f"{made['compute_wall_time_s']:.0f}" if "compute_wall_time_s" in made else "",
                     made.get("device", ""), made.get("date_utc", "")[:10], (made.get("commit") or "")[:12]])
    header = ["figure", "fidelity", "paper's counts", "verdicts", "runs' wall s", "device", "date", "commit"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
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
        "(`<paper>/<figure>.json`: its table, checks and provenance). \"Runs' wall s\" is the sum of the runs' own "
        "wall times as they were computed (compilation included).\n\n" + status_table(found, experiments))
    body = "".join(_figure_html(r, links.get((r["paper"], r["figure"]))) for r in found) or "<p>No figures yet: run <code>sgi-figures</code>.</p>"
    toc = "".join(f'<li><a href="#{html.escape(r["paper"])}-{html.escape(r["figure"])}">'
                  f'{html.escape(heading(r)[1])}</a> ({fidelity_label(r)})</li>' for r in found)
    page = (OWN_FILES["index.html"] + f"<style>{_STYLE}</style></head><body>\n<h1>sgi-run: paper figures</h1>\n"
            f"<p>Bands and ± values are Monte Carlo standard errors (SE). A check's margin says how many SE "
            f"its value lies inside (+) or outside (−) the acceptance band. A quick view of this directory: "
            f"<code>make docs</code> builds the documentation site, where each figure has its page with the "
            f"captions' mathematics rendered.</p><ul>{toc}</ul>{body}\n</body></html>\n")
    index = output_dir / "index.html"
    write_text_atomically(index, page)
    return index
