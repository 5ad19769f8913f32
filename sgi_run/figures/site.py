"""The documentation site's figure pages, written from the figures' records: one page per figure (its image,
caption, table, checks, the command that makes it, its provenance and data files) and, on each paper's page, a
grid of its figures with their verdicts. ``make docs`` builds the site (``mkdocs.yml``); the mkdocs hook
``docs/hooks/figure_pages.py`` calls ``site_files`` and ``paper_gallery`` during the build, so nothing generated
is kept in the repository.

A figure's record is ``<paper>/<figure>.json`` in one of the record directories (``gallery/paper``, the figures
kept at the papers' counts, then ``outputs/figures``, whatever ``sgi-figures`` made here); where several hold
one, the record at the paper's counts wins, then the first directory's. A figure of ``experiments/`` with no
record anywhere gets a page too: its caption, the command that makes it, and that it is not computed here.
The HTML page ``sgi-figures`` writes beside the figures (``gallery.build``) is the quick look at one output
directory; this module shares its notion of a record (``gallery.records``, ``heading``, ``at_papers_counts``,
``verdict_counts``).
"""
from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

from sgi_run import markdown
from sgi_run.figures import gallery
from sgi_run.figures.experiment import Experiment, figure_command, figure_order
from sgi_run.figures.records import stale_reasons
from sgi_run.figures.tables import (RELATIVE_SE_TEXT, RUN_COLUMNS_FROM, STUDY_MD_HEADER, disagreement_lines,
                                    markdown_table, md_cells, md_header, study_md_rows, table_parts,
                                    work_precision_header, work_precision_md_rows)
from sgi_run.figures.gallery import at_papers_counts, heading
from sgi_run.figures.results import BY_CONSTRUCTION, CheckResult, verdict_counts

# Where the figure pages and their files sit in the site, relative to its docs directory: papers/<paper>.md is
# the paper's own page (docs/papers/), papers/<paper>/<figure>.md a figure's.
PAPERS = "papers"
VERDICT_CLASSES = {"PASS": "pass", "FAIL": "fail", "SKIP": "skip", "by construction": "construction"}


@dataclasses.dataclass
class Figure:
    """One paper figure as the site shows it: its record (None: not computed here), the directory the record
    and its files are in, and its experiment (None: a record whose experiment file is gone)."""
    paper: str
    figure: str
    record: dict | None
    directory: Path | None
    experiment: Experiment | None
    source: str = ""        # the record directory as the page names it (relative to the repository)

    @property
    def page(self) -> str:
        """The figure page's path in the docs directory."""
        return f"{PAPERS}/{self.paper}/{self.figure}.md"

    @property
    def files_dir(self) -> str:
        """Where its data files sit in the docs directory (beside the figure pages of its paper)."""
        return f"{PAPERS}/{self.paper}/files"

    @property
    def label(self) -> str:
        if self.record is not None:
            return heading(self.record)[0]
        return self.experiment.label

    @property
    def title(self) -> str:
        return self.record["title"] if self.record is not None else self.experiment.title

    # The paper's caption and where it is are the paper's words, not results: the experiment file's, where it
    # exists, so that a record drawn before they were corrected (a stale GPU record) shows them as they are now.
    @property
    def caption(self) -> str:
        return self.experiment.caption if self.experiment is not None else self.record["caption"]

    @property
    def citation(self) -> str:
        return self.experiment.source if self.experiment is not None else self.record.get("source", "")

    @property
    def diagnostic(self) -> bool:
        if self.record is not None:
            return bool(self.record.get("diagnostic"))
        return self.experiment.diagnostic

    @property
    def short_name(self) -> str:
        """"Figure 4.1", or a diagnostic's id (its name says only that it is no figure of the paper): how the
        paper's navigation and grid list it."""
        name = (self.record or {}).get("name") or (self.experiment.name if self.experiment else "")
        return self.figure if self.diagnostic or not name else name

    @property
    def stale(self) -> list[str]:
        """Why its record is stale (``records.stale_reasons``); empty where it is current or there is none."""
        return stale_reasons(self.record, self.experiment) if self.record is not None else []

    def data_files(self) -> dict[str, Path]:
        """Kind (png, csv, md, checks, json) -> the file in the record's directory, for those that exist."""
        if self.record is None:
            return {}
        found = {kind: self.directory / self.paper / name for kind, name in self.record["files"].items()}
        return {kind: path for kind, path in found.items() if path.is_file()}


def collect(record_dirs, experiments=(), root=None) -> list[Figure]:
    """Every figure to show, in the papers' order: each experiment's, and each record's whose experiment is
    not among ``experiments``. A figure's record is the first at the paper's counts found in ``record_dirs``
    (in their order), else the first found. ``root``: the repository, which pages name record directories
    from."""
    candidates: dict[tuple[str, str], list[dict]] = {}
    for directory in record_dirs:
        if Path(directory).is_dir():
            for record in gallery.records(Path(directory)):
                record["_directory"] = str(directory)
                candidates.setdefault((record["paper"], record["figure"]), []).append(record)
    by_id = {(e.paper, e.figure): e for e in experiments}
    figures = []
    for key in sorted(set(candidates) | set(by_id), key=lambda k: figure_order(Path(k[0]) / k[1])):
        found = candidates.get(key, [])
        record = next((r for r in found if at_papers_counts(r)), found[0] if found else None)
        directory = Path(record.pop("_directory")) if record is not None else None
        source = ""
        if directory is not None:
            source = (directory.resolve().relative_to(Path(root).resolve()).as_posix()
                      if root is not None and directory.resolve().is_relative_to(Path(root).resolve())
                      else directory.as_posix())
        figures.append(Figure(key[0], key[1], record, directory, by_id.get(key), source))
    return figures


# --- text ---------------------------------------------------------------------------------------------------
_MATH = re.compile(r"(\$[^$]+\$)")


def caption_markdown(text: str) -> str:
    """A caption as markdown: its TeX (``$...$``) is left for the math renderer, its emphasis (``*Top:*``) for
    markdown; ``<`` and ``&`` outside the math are shown as they are, not read as HTML."""
    parts = _MATH.split(text.replace("\n", " "))
    return "".join(p if i % 2 else html.escape(p, quote=False) for i, p in enumerate(parts))


def markdown_literal(text) -> str:
    """Text shown as it is in markdown (a table cell, a check's criterion): no emphasis, links, math or HTML."""
    text = html.escape(str(text).replace("\n", " "), quote=False)
    return re.sub(r"([\\`*_\[\]|$#])", r"\\\1", text)


def _markdown_table(header: list[str], rows: list[list[str]], at: int | None = None) -> list[str]:
    """The table as markdown, in parts a reader sees whole in the content column at 800 px
    (``tables.table_parts``: its empty columns left out, a wide one split at column ``at``)."""
    lines = []
    for part_header, part_rows in table_parts(header, rows, at):
        lines += markdown_table(part_header, part_rows, markdown_literal) + [""]
    return lines


def badge(text: str, verdict: str) -> str:
    return f'<span class="sgi-badge sgi-{VERDICT_CLASSES[verdict]}">{text}</span>'


def badges(counts: dict[str, int]) -> str:
    """The verdict counts as badges, e.g. ``12 PASS``, ``1 FAIL``; a count of zero is left out."""
    spans = [badge(f"{counts[v]} {v}", v) for v in ("PASS", "FAIL", "SKIP", BY_CONSTRUCTION) if counts.get(v)]
    return '<span class="sgi-badges">' + "".join(spans) + "</span>" if spans else ""


def fidelity_words(record: dict) -> str:
    """Which profile computed the record and whether those are the paper's counts: a profile whose counts are
    the paper's is never called reduced."""
    fidelity = record["fidelity"]
    if fidelity == "paper":
        return "the paper's counts (paper profile)"
    if at_papers_counts(record):
        return f"the paper's counts (the {fidelity} profile, whose counts are the paper's)"
    return f"{fidelity} fidelity, not the paper's counts"


def _profile_text(profile: dict) -> str:
    text = ", ".join(f"`{o}`" for o in profile["overrides"]) or "no overrides"
    runs = "; ".join(f"{run}: {', '.join(f'`{o}`' for o in overrides)}" for run, overrides in profile["runs"].items())
    return text + (f" (runs: {runs})" if runs else "")


def _reproduce_section(figure: Figure, fidelity: str) -> list[str]:
    return ["## Reproduce it", "",
            f"```sh\n{figure_command(figure.paper, figure.figure, fidelity)}\n```", "",
            f"writes `outputs/figures/{figure.paper}/{figure.figure}.png` and its table, checks and record "
            "(`--output gallery/paper` to replace the figure kept in the repository). Runs already in the run "
            "cache are not computed again.", ""]


def _provenance_section(record: dict) -> list[str]:
    made = record.get("provenance")
    if not made:
        return ["## Provenance", "", "This record was written before provenance was kept.", ""]
    commit = made.get("commit") or "unknown"
    if made.get("uncommitted_changes"):
        commit += " (with uncommitted changes)"
    rows = [("sgi-run commit", commit), ("date (UTC)", made.get("date_utc", "")),
            ("device", made.get("device", "")),
            ("runs computed on", ", ".join(made.get("runs_computed_on", []))),
            ("runs' wall time", f"{made['compute_wall_time_s']:.0f} s (the sum of the runs' own wall times, "
                                "compilation included)" if "compute_wall_time_s" in made else ""),
            ("figure's wall time", f"{made['wall_time_s']:.0f} s" if "wall_time_s" in made else ""),
            ("runs (cached)", f"{made['runs']} ({made.get('cached_runs', 0)} taken from the run cache)"
             if "runs" in made else ""),
            ("numerics code digest", made.get("numerics_code", "")), ("JAX", made.get("jax_version", "")),
            ("command, as recorded", made.get("command", ""))]
    return ["## Provenance", "", *markdown.table(["what made it", ""], [[what, markdown_literal(value)]
                                                                        for what, value in rows if value], str), ""]


def _checks_section(record: dict) -> list[str]:
    lines = ["## Checks", "", badges(verdict_counts(record["checks"])), ""]
    if not record["checks"]:
        return lines + ["This figure has no checks.", ""]
    cells = []
    for check in record["checks"]:
        verdict = "by construction" if check.get("by_construction") else check["verdict"]
        measured = CheckResult.from_record(check).measured()
        cells.append([badge(verdict, verdict), f"`{check['id']}`", f"`{check['run']}`", markdown_literal(measured),
                      markdown_literal(check["criterion"])])
    return lines + markdown.table(["verdict", "check", "run", "measured", "criterion"], cells, str) + [""]



def _files_section(figure: Figure) -> list[str]:
    what = {"png": "the figure (PNG)", "pdf": "the figure for print (PDF, vector)", "svg": "the figure (SVG, vector)", "csv": "its table at full precision (CSV)", "md": "its table (markdown)",
            "checks": "its checks with verdicts (markdown)", "json": "its record: table, checks, provenance (JSON)"}
    lines = ["## Data files", ""]
    lines += [f"- [`{path.name}`](files/{path.name}): {what.get(kind, kind)}"
              for kind, path in figure.data_files().items()]
    return lines + [""]


def figure_page(figure: Figure) -> str:
    """The markdown of a figure's page."""
    if figure.record is None:
        return _placeholder_page(figure)
    r = figure.record
    label, title = heading(r)
    made = r.get("provenance") or {}
    when = f" on {made['date_utc'][:10]}" if made.get("date_utc") else ""
    kind = "success" if at_papers_counts(r) else "warning"
    fidelity = [f'!!! {kind} "Computed at {fidelity_words(r)}"', "",
                f"    This page shows the figure computed with {_profile_text(r['fidelity_overrides'][r['fidelity']])}"
                f"{when}, from `{figure.source}`."]
    paper_profile = r["fidelity_overrides"].get("paper")
    if not at_papers_counts(r) and paper_profile:
        fidelity.append(f"    The paper's counts: {_profile_text(paper_profile)}; not computed at them here.")
    runs = "; ".join(dict.fromkeys(row["label"] for row in r["table"] + r.get("convergence", [])))
    caption_kind = "Caption (not a figure of the paper)" if r.get("diagnostic") else "The paper's caption"
    png = r["files"]["png"]
    lines = [f"# {markdown_literal(title)}", "", badges(verdict_counts(r["checks"])), "", *_stale_banner(figure),
             *fidelity, "",
             f'[![{markdown_literal(label)}](files/{png}){{ .sgi-figure }}](files/{png} "the image at full size")', "",
             f"**{caption_kind}** ({markdown_literal(figure.citation)}): {caption_markdown(figure.caption)}", ""]
    if runs:
        lines += [f"**Runs drawn here:** {markdown_literal(runs)}.", ""]
    if r.get("note"):
        lines += [f"**Note:** {caption_markdown(r['note'])}", ""]
    # Beside the caption it contradicts: what the paper says, what is measured (the checks' computed values).
    # The entries are the experiment file's words (a stale record may predate them); the values, the record's.
    entries = figure.experiment.disagreements if figure.experiment is not None else r.get("disagreements", [])
    lines += disagreement_lines(entries, r["checks"], markdown_literal, lambda v: badge(v, v))
    lines += _reproduce_section(figure, r["fidelity"]) + _provenance_section(r)
    table = _markdown_table(md_header(r.get("observable", "H"), r["table"]), [md_cells(row) for row in r["table"]],
                            RUN_COLUMNS_FROM)
    studies = _markdown_table(STUDY_MD_HEADER, study_md_rows(r.get("convergence", [])))
    precision = r.get("work_precision", [])
    costs = _markdown_table(work_precision_header(precision), work_precision_md_rows(precision))
    if table or studies:
        explained = f" {markdown_literal(RELATIVE_SE_TEXT)}" if table else ""
        lines += ["## Table", "", f"Bands and ± values are Monte Carlo standard errors (SE).{explained}", "", *table,
                  *studies]
    if costs:
        lines += ["## Work-precision", "", f"Each step size's error against its cost, every method timed in one series "
                  f"on {precision[0]['device']} ({precision[0]['timed_paths']} paths, {precision[0]['repeats']} "
                  "repeats; median per path [fastest, slowest]).", "", *costs]
    lines += _checks_section(r) + _files_section(figure)
    return "\n".join(lines)


def _stale_banner(figure: Figure) -> list[str]:
    """A warning, first on the page, where the record no longer shows what this checkout would draw."""
    reasons = figure.stale
    if not reasons:
        return []
    return ['!!! danger "Stale record: drawn by older code or from an older experiment file"', "",
            f"    {markdown_literal('; '.join(reasons)).capitalize()}. `sgi-figures` run from a clean commit draws it "
            "again; until then this page shows what that earlier code computed.", ""]


def _placeholder_page(figure: Figure) -> str:
    exp = figure.experiment
    caption_kind = "Caption (not a figure of the paper)" if exp.diagnostic else "The paper's caption"
    paper_profile = exp.fidelity.get("paper")
    lines = [f"# {markdown_literal(exp.heading)}", "", '!!! note "Not computed here"', "",
             "    No record of this figure is in the record directories this site was built from "
             f"(`gallery/paper`, `outputs/figures`). Status: {markdown_literal(gallery.status(None, exp)[0])}.", ""]
    if paper_profile:
        same = " Its reduced profile has the paper's counts." if exp.at_papers_counts("reduced") else ""
        lines += [f"The paper's counts: {_profile_text({'overrides': paper_profile['overrides'], 'runs': paper_profile['runs']})}."
                  f"{same}", ""]
    lines += [f"**{caption_kind}** ({markdown_literal(exp.source)}): {caption_markdown(exp.caption)}", ""]
    if exp.note:
        lines += [f"**Note:** {caption_markdown(exp.note)}", ""]
    lines += _reproduce_section(figure, "paper" if paper_profile else "reduced")
    lines += ["At `--fidelity reduced` it computes on a CPU in minutes; `--fidelity smoke` in seconds.", ""]
    return "\n".join(lines)


def _card(figure: Figure) -> str:
    """A figure's cell of its paper's grid: the thumbnail linking its page, its name, verdicts, fidelity and
    caption."""
    page = f"{figure.paper}/{figure.figure}.md"
    if figure.record is None:
        image = '<div class="sgi-thumb sgi-missing">not computed here</div>'
        status = (markdown_literal(gallery.status(None, figure.experiment)[0]) if figure.experiment
                  else "not computed here")
    else:
        image = (f'[![{markdown_literal(figure.label)}]({figure.paper}/files/{figure.record["files"]["png"]})'
                 '{ .sgi-thumb loading=lazy }]' + f"({page})")
        status = (badges(verdict_counts(figure.record["checks"]))
                  + (' <span class="sgi-badge sgi-stale" title="' + html.escape("; ".join(figure.stale))
                     + '">stale record</span>' if figure.stale else "")
                  + f' <span class="sgi-fidelity">{markdown_literal(fidelity_words(figure.record))}</span>')
    return "\n".join(['<div class="sgi-card" markdown="block">', "", image, "",
                      f"**[{markdown_literal(figure.short_name)}]({page})**: {markdown_literal(figure.title)}", "",
                      status, "",
                      f'<div class="sgi-caption" markdown="span">{caption_markdown(figure.caption)}</div>', "",
                      "</div>", ""])


def paper_gallery(figures: list[Figure]) -> str:
    """The section a paper's page gains: the grid of its figures, then of its diagnostics."""
    lines = []
    for title, members in (("Figures", [f for f in figures if not f.diagnostic]),
                           ("Diagnostics (not figures of the paper)", [f for f in figures if f.diagnostic])):
        if not members:
            continue
        computed = [f for f in members if f.record is not None]
        total = verdict_counts([c for f in computed for c in f.record["checks"]])
        lines += [f"## {title}", "",
                  f"{len(computed)} of {len(members)} computed here; their checks: {badges(total) or 'none'}. "
                  "Each links its page: the full-size figure, its table, checks, provenance and the command that "
                  "makes it.", "", '<div class="sgi-grid" markdown="block">', "",
                  *(_card(f) for f in members), "</div>", ""]
    return "\n".join(lines)


def papers_index(figures: list[Figure], titles: dict[str, str]) -> str:
    """The overview of every paper: its figures computed, at which fidelity, and their verdicts."""
    lines = ["# Papers and figures", "",
             "Every figure of the five reproduced papers, computed from its experiment file "
             "(`experiments/<paper>/<figure>.yaml`). A paper's page says what is reproduced and how, then shows "
             "its figures; each figure's page has its image, table, checks, provenance and the command that "
             "makes it again.", ""]
    cells = []
    for paper, title in titles.items():
        members = [f for f in figures if f.paper == paper and not f.diagnostic]
        computed = [f for f in members if f.record is not None]
        total = verdict_counts([c for f in computed for c in f.record["checks"]])
        cells.append([f"[{markdown_literal(title)}]({paper}.md)", f"{len(computed)} of {len(members)}",
                      str(sum(at_papers_counts(f.record) for f in computed)), badges(total)])
    lines += markdown.table(["paper", "figures computed", "at the paper's counts", "checks"], cells, str)
    return "\n".join(lines + [""])


def insert_gallery(markdown: str, gallery: str) -> str:
    """A paper's page with its gallery after the introduction (before its first section)."""
    at = markdown.find("\n## ")
    return markdown + "\n\n" + gallery if at < 0 else markdown[:at] + "\n\n" + gallery + markdown[at:]
