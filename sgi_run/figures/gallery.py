"""``index.html``: every figure found under the output directory, beside its paper caption, with its
table, its verdicts and the fidelity it was run at. Rebuilt from the ``<paper>/<figure>.json``
records, so it shows whatever figures exist, from whichever runs made them."""
from __future__ import annotations

import html
import json
from pathlib import Path

from sgi_run.figures.results import CheckResult
from sgi_run.figures.experiment import MD_HEADER, STUDY_MD_HEADER, figure_order, md_cells, study_md_rows

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1400px; color: #222; }
.figure { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.figure img { max-width: 720px; width: 100%; border: 1px solid #ccc; }
.caption { max-width: 560px; font-size: 0.95em; }
.fidelity { padding: 0.4em 0.6em; background: #fff6d5; border-left: 4px solid #e0b000; }
.fidelity.paper { background: #e6f4e6; border-color: #3a3; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
td:first-child { text-align: left; }
.PASS { color: #161; font-weight: bold; } .FAIL { color: #b00; font-weight: bold; } .SKIP { color: #888; }
ul.checks { font-family: monospace; font-size: 0.85em; }
"""


def _records(output_dir: Path) -> list[dict]:
    records = []
    for path in sorted(output_dir.glob("*/*.json"), key=figure_order):
        record = json.loads(path.read_text())
        if "figure" in record and "checks" in record:
            record["_dir"] = path.parent.name
            records.append(record)
    return records


def _fidelity_note(r: dict) -> str:
    def describe(profile: dict) -> str:
        text = ", ".join(profile["overrides"])
        extra = "; ".join(f"{run}: {', '.join(o)}" for run, o in profile["runs"].items())
        return text + (f" ({extra})" if extra else "")

    used = r["fidelity_overrides"][r["fidelity"]]
    made = _made_text(r)
    if r["fidelity"] == "paper" or r.get("papers_counts"):
        profile = "" if r["fidelity"] == "paper" else f" (its {r['fidelity']} profile is the paper's)"
        return (f'<p class="fidelity paper">At the paper\'s counts{profile}: {html.escape(describe(used))}.'
                f"{made}</p>")
    paper = r["fidelity_overrides"].get("paper")
    versus = f" The paper's counts: {html.escape(describe(paper))}." if paper else ""
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


def fidelity_label(r: dict) -> str:
    """The fidelity a contents line names: "paper counts" where the profile's counts are the paper's."""
    return "paper counts" if r["fidelity"] == "paper" or r.get("papers_counts") else r["fidelity"]


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
    return "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + f"</tr>{rows}</table>"


def _figure_html(r: dict) -> str:
    e = html.escape
    studies = r.get("convergence", [])     # records written before convergence studies have none
    tables = _table_html(MD_HEADER, [md_cells(row) for row in r["table"]]) + _table_html(STUDY_MD_HEADER, study_md_rows(studies))
    checks = "".join(
        f'<li><span class="{c["verdict"]}">{c["verdict"]}</span> {e(c["id"])} [{e(c["run"])}]: '
        f"{e(CheckResult(**c).measured())}<br><small>{e(c['criterion'])}</small></li>" for c in r["checks"])
    counts = {v: sum(c["verdict"] == v for c in r["checks"]) for v in ("PASS", "FAIL", "SKIP")}
    summary = ", ".join(f'<span class="{v}">{n} {v}</span>' for v, n in counts.items() if n)
    runs = "; ".join(dict.fromkeys(row["label"] for row in r["table"] + studies))
    note = f"<p>{e(r['note'])}</p>" if r.get("note") else ""
    label, title = heading(r)
    caption = "Caption (not a figure of the paper)" if r.get("diagnostic") else "Paper caption"
    return f"""
<section id="{e(r['paper'])}-{e(r['figure'])}">
<h2>{e(title)}</h2>
{_fidelity_note(r)}
<div class="figure">
  <img src="{e(r['_dir'])}/{e(r['files']['png'])}" alt="{e(label)}">
  <div class="caption"><p><b>{caption}</b> ({e(r.get('source', ''))}):</p><p>{e(r['caption'])}</p>
  <p><b>Runs drawn here:</b> {e(runs)}.</p>{note}</div>
</div>
{tables}
<p>Checks: {summary}</p>
<ul class="checks">{checks}</ul>
</section>"""


def build(output_dir) -> Path:
    """Write ``<output_dir>/index.html`` from the figure records there; returns its path."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    records = _records(output_dir)
    body = "".join(_figure_html(r) for r in records) or "<p>No figures yet: run <code>sgi-figures</code>.</p>"
    toc = "".join(f'<li><a href="#{html.escape(r["paper"])}-{html.escape(r["figure"])}">'
                  f'{html.escape(heading(r)[1])}</a> ({fidelity_label(r)})</li>' for r in records)
    page = (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>sgi-run figures</title>"
            f"<style>{_STYLE}</style></head><body>\n<h1>sgi-run: paper figures</h1>\n"
            f"<p>Bands and ± values are Monte Carlo standard errors (SE). A check's margin says how many SE "
            f"its value lies inside (+) or outside (−) the acceptance band.</p><ul>{toc}</ul>{body}\n</body></html>\n")
    index = output_dir / "index.html"
    index.write_text(page)
    return index
