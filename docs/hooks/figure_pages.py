"""mkdocs hook (``mkdocs.yml``: ``hooks``): the pages that are written, not kept, when the site is built.

- one page per paper figure and its data files, from the figure records (``sgi_run.figures.site``); each
  paper's page (``docs/papers/<paper>.md``) gains the grid of its figures, the navigation their pages;
- the benchmark's pages (``sgi_run.bench.pages``: "Which method for my system?" and one page per system) from the
  suite's results kept in ``extra.bench_results`` (default ``gallery/bench``), when it holds one;
- ``usage.md``: the repository's README.md, the command-line reference, with its links made the site's;
- MathJax from the installed ``django-static-mathjax`` package, so that the site loads nothing from the network;
- ``404.html``'s links made relative, so that the site works opened from disk.

Where the records come from: ``extra.figure_records`` (directories, relative to ``mkdocs.yml``; default
``gallery/paper`` then ``outputs/figures``), and ``extra.experiments`` (default ``experiments``).
"""
from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

from sgi_run.bench import pages as bench_pages
from sgi_run.bench import results as bench_results
from sgi_run.figures import experiment, site

MATHJAX = "javascripts/mathjax/tex-svg.js"     # extra_javascript names it
_state: dict = {}


class DataFile(File):
    """A figure's data file copied as it is, a table's ``.md`` included: a file to download, not a page."""

    def is_documentation_page(self) -> bool:
        return False


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_config(config):
    root = _root(config)
    extra = config.extra
    records = [root / d for d in extra.get("figure_records", ["gallery/paper", "outputs/figures"])]
    experiments = experiment.discover(root / extra.get("experiments", "experiments"))
    figures = site.collect(records, experiments, root)
    _state.update(root=root, figures=figures, titles={e.paper: e.paper_name or e.paper for e in experiments})
    for figure in figures:      # a record whose experiment file is gone
        _state["titles"].setdefault(figure.paper, (figure.record or {}).get("paper_name") or figure.paper)
    config.nav = _with_figures(config.nav or [], figures)
    bench = root / extra.get("bench_results", "gallery/bench")
    _state["bench"] = (bench, bench_results.read(bench)) if (bench / bench_results.RESULTS).is_file() else None
    systems = _state["bench"][1]["systems"] if _state["bench"] else []
    config.nav.append({"Benchmark": [{"Which method for my system?": f"{bench_pages.DIR}/index.md"}]
                       + [{s["name"]: bench_pages.page_of(s["name"])} for s in systems]})
    return config


def _with_figures(nav: list, figures: list[site.Figure]) -> list:
    """The navigation with each paper's page replaced by a section: the page, then one entry per figure."""
    out = []
    for entry in nav:
        if isinstance(entry, dict):
            (title, value), = entry.items()
            if isinstance(value, list):
                out.append({title: _with_figures(value, figures)})
                continue
            match = re.fullmatch(rf"{site.PAPERS}/(\w+)\.md", value)
            members = [f for f in figures if match and f.paper == match.group(1)]
            if members:
                entry = {title: [{"The paper and its figures": value}]
                         + [{f.short_name: f.page} for f in members]}
        out.append(entry)
    return out


def on_files(files: Files, config) -> Files:
    figures = _state["figures"]
    for figure in figures:
        files.append(File.generated(config, figure.page, content=site.figure_page(figure)))
        for path in figure.data_files().values():
            data = DataFile(f"{figure.files_dir}/{path.name}", src_dir=None, dest_dir=config.site_dir,
                            use_directory_urls=config.use_directory_urls)
            data.abs_src_path = str(path)
            files.append(data)
    files.append(File.generated(config, f"{site.PAPERS}/index.md",
                                content=site.papers_index(figures, _state["titles"])))
    if not _state["bench"]:
        files.append(File.generated(config, f"{bench_pages.DIR}/index.md", content=bench_pages.NO_RESULTS))
    else:
        directory, record = _state["bench"]
        files.append(File.generated(config, f"{bench_pages.DIR}/index.md", content=bench_pages.index_page(record)))
        for system in record["systems"]:
            files.append(File.generated(config, bench_pages.page_of(system["name"]),
                                        content=bench_pages.system_page(record, system)))
        for path in sorted(directory.iterdir()):
            if path.suffix in (".png", ".svg", ".csv", ".json", ".h5"):
                data = DataFile(f"{bench_pages.DIR}/{path.name}", src_dir=None, dest_dir=config.site_dir,
                                use_directory_urls=config.use_directory_urls)
                data.abs_src_path = str(path)
                files.append(data)
    readme = _state["root"] / "README.md"
    files.append(File.generated(config, "usage.md",
                                content=rewrite_links(readme.read_text(), readme, "usage.md", config)))
    spec = importlib.util.find_spec("mathjax")     # django-static-mathjax; not imported (it is a Django app)
    mathjax = Path(spec.submodule_search_locations[0]) / "static" / "mathjax" / "es5" / Path(MATHJAX).name
    files.append(File.generated(config, MATHJAX, abs_src_path=str(mathjax)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    paper = re.fullmatch(rf"{site.PAPERS}/(\w+)\.md", src)
    if paper and page.file.abs_src_path:
        members = [f for f in _state["figures"] if f.paper == paper.group(1)]
        if members:
            markdown = site.insert_gallery(markdown, site.paper_gallery(members))
    if page.file.abs_src_path and Path(page.file.abs_src_path).resolve().is_relative_to(Path(config.docs_dir).resolve()):
        markdown = rewrite_links(markdown, Path(page.file.abs_src_path), src, config)
    return markdown


_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def rewrite_links(markdown: str, source: Path, src_uri: str, config) -> str:
    """Relative links of a markdown file at ``source`` as the site's page ``src_uri`` needs them: a file of the
    docs directory by its path from the page, the repository's README.md as ``usage.md`` and
    ``gallery/paper/README.md`` as the papers' overview; any other file of the repository is not in the site,
    so its link becomes its text; docs/README.md, the repository's index of docs/, is the site's home page (the path a reader of the repository finds it at)."""
    root, docs = _state["root"], Path(config.docs_dir).resolve()
    in_site = {root / "README.md": docs / "usage.md", docs / "README.md": docs / "index.md",
               root / "gallery/paper/README.md": docs / site.PAPERS / "index.md"}
    page_dir = (docs / src_uri).parent

    def replace(match: re.Match) -> str:
        text, target = match.groups()
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve()
        resolved = in_site.get(resolved, resolved)
        if not resolved.is_relative_to(docs) or (resolved.is_dir() and not (resolved / "index.md").exists()):
            return text
        if resolved.is_dir():
            resolved = resolved / "index.md"
        relative = os.path.relpath(resolved, page_dir).replace(os.sep, "/")
        return f"[{text}]({relative}{'#' + anchor if anchor else ''})"

    return _LINK.sub(replace, markdown)


def on_post_build(config) -> None:
    """``404.html`` with its links relative to the site's root, where it lies: MkDocs writes them root-absolute
    (``/index.html``) when ``site_url`` is unset, which from disk (the README's way to open the site) names the
    disk's root."""
    page = Path(config.site_dir) / "404.html"
    if page.is_file():
        page.write_text(re.sub(r'\b(href|src)="/(?!/)', r'\1="', page.read_text()))
