"""The documentation site (``make docs``): the figure pages written from the records (sgi_run/figures/site.py),
built strictly with mkdocs from a few records, and the built site loads nothing from the network."""
import json
import re
import shutil

import pytest
import yaml

from sgi_run.figures import site
from sgi_run.figures.experiment import discover
from sgi_run.figures.records import experiment_digest
from sgi_run.provenance import code_digest
from tests.conftest import ROOT, made_by_todays_code

pytestmark = pytest.mark.xdist_group("docs_site")
GALLERY = ROOT / "gallery" / "paper"


def copy_record(source_dir, paper, figure, target_dir, **changes):
    """A committed figure's five files in ``target_dir``, its record changed by ``changes``."""
    (target_dir / paper).mkdir(parents=True, exist_ok=True)
    record = json.loads((source_dir / paper / f"{figure}.json").read_text())
    for name in record["files"].values():
        shutil.copy(source_dir / paper / name, target_dir / paper / name)
    record.update(changes)
    (target_dir / paper / f"{figure}.json").write_text(json.dumps(record))
    return record


def test_the_record_at_the_papers_counts_wins_over_an_earlier_directorys(tmp_path):
    copy_record(GALLERY, "luesink_2023", "fig4", tmp_path / "reduced", fidelity="reduced", papers_counts=False)
    copy_record(GALLERY, "luesink_2023", "fig4", tmp_path / "paper")
    copy_record(GALLERY, "luesink_2023", "fig5", tmp_path / "reduced", fidelity="reduced", papers_counts=False)
    figures = {f.figure: f for f in site.collect([tmp_path / "reduced", tmp_path / "paper"], root=tmp_path)}
    assert (figures["fig4"].record["fidelity"], figures["fig4"].source) == ("paper", "paper")
    assert (figures["fig5"].record["fidelity"], figures["fig5"].source) == ("reduced", "reduced")


def test_a_check_by_construction_is_a_badge_apart_from_the_passes():
    checks = [{"verdict": "PASS"}, {"verdict": "PASS", "by_construction": True}, {"verdict": "FAIL"},
              {"verdict": "SKIP"}]
    badges = site.badges(site.verdict_counts(checks))
    assert "1 PASS" in badges and "1 by construction" in badges and "2 PASS" not in badges and "1 FAIL" in badges


def test_a_caption_keeps_its_math_and_emphasis_and_shows_html_as_text():
    assert site.caption_markdown(r"*Top:* $a < b$ and x < y & z") == r"*Top:* $a < b$ and x &lt; y &amp; z"
    assert site.markdown_literal("a_b *c* |d| $e$") == r"a\_b \*c\* \|d\| \$e\$"


DISAGREEMENT = {"claim": "It is very clear that the near-Boltzmann Gibbs preserving CSVIA performs successfully "
                         "for every friction factor tested.", "where": "Section 2, Figure 2.2 caption",
                "checks": ["plateau_csvia_c10"], "finding": "CSVIA's plateau is off the line at c = 10",
                "explanation": "unexplained"}


def test_a_disagreement_is_on_the_page_near_the_caption_with_its_checks_computed_value():
    record = json.loads((GALLERY / "bou_rabee_owhadi" / "fig2_2.json").read_text())
    record["disagreements"] = [DISAGREEMENT]
    check = next(c for c in record["checks"] if c["id"] == "plateau_csvia_c10")
    check.update(value=-0.2216, se=0.00074, verdict="FAIL", quantity="window mean - reference")
    page = site.figure_page(site.Figure("bou_rabee_owhadi", "fig2_2", record, GALLERY, None, "gallery/paper"))
    section = page.index("## Where this figure disagrees with the paper")
    assert page.index("**The paper's caption**") < section < page.index("## Reproduce it")
    entry = page[section:page.index("## Reproduce it")]
    assert "“It is very clear that the near-Boltzmann Gibbs preserving CSVIA performs successfully" in entry
    assert "(Section 2, Figure 2.2 caption)" in entry and "off the line at c = 10" in entry
    assert re.search(r"sgi-fail\">FAIL</span> `plateau_csvia_c10` \[csvia_c10\]: window mean - reference = "
                     r"-0\.2216 ± 0\.00074", entry)
    assert "**Explanation:** unexplained" in entry
    del record["disagreements"]     # a record written before disagreements were kept: no section
    assert "disagrees" not in site.figure_page(site.Figure("bou_rabee_owhadi", "fig2_2", record, GALLERY, None))


def test_a_stale_record_shows_todays_caption_and_disagreements_without_values_it_never_computed():
    """Kraus & Tyranowski 4.4 was drawn on a GPU before its caption was quoted verbatim and before its
    disagreement entry: the page shows the experiment file's words, and says which named checks the old record
    does not have rather than inventing their values."""
    experiment = next(e for e in discover(ROOT / "experiments") if (e.paper, e.figure) == ("kraus_tyranowski_2021", "fig4_4"))
    record = json.loads((GALLERY / "kraus_tyranowski_2021" / "fig4_4.json").read_text())
    record.update(caption="an older paraphrase", source="papers/000_old.txt", disagreements=[])
    page = site.figure_page(site.Figure("kraus_tyranowski_2021", "fig4_4", record, GALLERY, experiment))
    assert "an older paraphrase" not in page and "papers/000_old.txt" not in page
    assert experiment.disagreements and "## Where this figure disagrees with the paper" in page
    named = [c for entry in experiment.disagreements for c in entry["checks"]]
    missing = [c for c in named if c not in {check["id"] for check in record["checks"]}]
    assert missing and "not computed in this record" in page and all(f"`{c}`" in page for c in missing)


@pytest.fixture(scope="module")
def experiments():
    return discover(ROOT / "experiments")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The site built strictly (a warning fails it) from a few records: Luesink Figure 4 at the paper's
    counts with one check by construction and one FAIL, its record current; Kraus & Tyranowski Figure 4.2 at
    reduced fidelity, its record stale (another experiment file);
    Figure 4.3 at a profile named reduced whose counts are the paper's; every other figure has no record."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    records = tmp_path_factory.mktemp("records")
    fig4 = json.loads((GALLERY / "luesink_2023" / "fig4.json").read_text())
    checks = [dict(c) for c in fig4["checks"]]
    checks[0]["by_construction"] = True
    checks[1] = {**checks[1], "verdict": "FAIL"}
    # Luesink Figure 4's record current (today's experiment file and numerics code, committed), 4.2's stale.
    exp = next(e for e in discover(ROOT / "experiments") if (e.paper, e.figure) == ("luesink_2023", "fig4"))
    copy_record(GALLERY, "luesink_2023", "fig4", records, checks=checks, experiment_digest=experiment_digest(exp),
                provenance={**fig4["provenance"], "numerics_code": code_digest(), "uncommitted_changes": False},
                run_code=made_by_todays_code(fig4["run_code"]))
    copy_record(GALLERY, "kraus_tyranowski_2021", "fig4_2", records, fidelity="reduced", papers_counts=False,
                experiment_digest="0" * 64)
    copy_record(GALLERY, "kraus_tyranowski_2021", "fig4_3", records, fidelity="reduced", papers_counts=True)
    out = tmp_path_factory.mktemp("site")
    extra = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["extra"]
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(out), strict=True,
                         extra={**extra, "figure_records": [str(records)]})
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)       # strict: raises mkdocs.exceptions.Abort on any warning
    finally:
        config.plugins.on_shutdown()
    return out, fig4, checks, records


def page_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_a_figure_page_has_its_command_verdicts_provenance_and_files(built):
    out, record, checks, records = built
    page = (out / "papers" / "luesink_2023" / "fig4.html").read_text()
    text = page_text(page)
    assert "sgi-figures --fidelity paper --only luesink_2023/fig4" in text
    passes = sum(c["verdict"] == "PASS" and not c.get("by_construction") for c in checks)
    assert f"{passes} PASS" in text and "1 FAIL" in text and "1 by construction" in text
    made = record["provenance"]
    for value in (made["commit"], made["date_utc"], made["device"], f"{made['compute_wall_time_s']:.0f} s"):
        assert value in text, value
    assert "Computed at the paper's counts" in text
    for name in record["files"].values():
        assert f'href="files/{name}"' in page, name
        assert (out / "papers" / "luesink_2023" / "files" / name).read_bytes() == (records / "luesink_2023" / name).read_bytes()
    assert re.search(r'<a href="files/fig4.png"[^>]*><img[^>]*class="sgi-figure"', page)
    assert r'<span class="arithmatex">\(\pi\cdot\gamma\)</span>' in page      # the caption's TeX, for MathJax


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_the_fidelity_is_named_and_paper_counts_are_never_called_reduced(built):
    out = built[0]
    reduced = page_text((out / "papers" / "kraus_tyranowski_2021" / "fig4_2.html").read_text())
    assert "Computed at reduced fidelity, not the paper's counts" in reduced
    assert "The paper's counts: plan.paths=" in reduced
    same = page_text((out / "papers" / "kraus_tyranowski_2021" / "fig4_3.html").read_text())
    assert "the paper's counts (the reduced profile, whose counts are the paper's)" in same
    assert "reduced fidelity" not in same


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_a_stale_record_is_marked_on_its_page_and_card_and_a_current_one_is_not(built):
    out = built[0]
    stale = page_text((out / "papers" / "kraus_tyranowski_2021" / "fig4_2.html").read_text())
    assert "Stale record" in stale and "Its experiment file was changed after it was drawn" in stale
    assert "Stale record" not in page_text((out / "papers" / "luesink_2023" / "fig4.html").read_text())
    cards = (out / "papers" / "kraus_tyranowski_2021.html").read_text()
    card = re.search(r'<div class="sgi-card">((?:(?!sgi-card).)*?fig4_2\.html.*?)</div>', cards, re.S).group(1)
    assert "stale record" in card
    assert "stale record" not in (out / "papers" / "luesink_2023.html").read_text()


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_a_wide_table_is_split_into_tables_the_content_column_holds(built):
    """The ensemble table's twelve columns, less the empty ones, in two tables of at most eight, each naming the
    run: a reader sees every column at 800 px without scrolling."""
    page = (built[0] / "papers" / "kraus_tyranowski_2021" / "fig4_2.html").read_text()
    section = page[page.index('id="table"'):page.index('id="checks"')]
    heads = [re.findall(r"<th[^>]*>(.*?)</th>", head) for head in re.findall(r"<thead>(.*?)</thead>", section, re.S)]
    assert len(heads) >= 2 and all(len(h) <= 8 and h[0] == "run" for h in heads)
    assert any("max_t SE/|E|" in h for h in heads) and "E crosses 0" in page_text(section)


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_a_figure_without_a_record_has_a_placeholder_page(built, experiments):
    out = built[0]
    exp = next(e for e in experiments if (e.paper, e.figure) == ("luesink_2023", "fig5"))
    text = page_text((out / "papers" / "luesink_2023" / "fig5.html").read_text())
    assert "Not computed here" in text and exp.title in text
    assert "sgi-figures --fidelity paper --only luesink_2023/fig5" in text


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_a_papers_page_is_its_text_and_a_grid_of_its_figures(built, experiments):
    out = built[0]
    page = (out / "papers" / "luesink_2023.html").read_text()
    assert "Casimir preserving stochastic Lie-Poisson integrators" in page      # docs/papers/luesink_2023.md
    assert re.search(r'<a href="luesink_2023/fig4.html"><img[^>]*src="luesink_2023/files/fig4.png"', page)      # the thumbnail, to its page
    assert page.count('class="sgi-card"') == sum(e.paper == "luesink_2023" for e in experiments)


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_the_home_page_has_the_readmes_two_commands(built):
    readme = (ROOT / "README.md").read_text()
    commands = re.search(r"```sh\n(make run .*?)```", readme, re.S).group(1).splitlines()
    assert [c.split()[:2] for c in commands] == [["make", "run"], ["make", "test"]]
    home = page_text((built[0] / "index.html").read_text().replace("&gt;", ">"))
    for command in commands:
        assert re.sub(r"\s+", " ", command) in home


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_the_site_loads_nothing_from_the_network(built):
    """No script, stylesheet, font, image or frame from an http(s) or protocol-relative URL, in any page or
    stylesheet (links a reader follows are allowed)."""
    out = built[0]
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 50
    loads = re.compile(r"<(?:script|link|img|iframe|source|audio|video)\b[^>]*?\b(?:src|href)=[\"']?(?:https?:)?//", re.I)
    for page in pages:
        assert not loads.search(page.read_text()), page.relative_to(out)
    for sheet in sorted(out.rglob("*.css")):
        assert not re.search(r"(?:url\(\s*[\"']?|@import\s+[\"'])(?:https?:)?//", sheet.read_text()), sheet
    assert (out / "javascripts" / "mathjax" / "tex-svg.js").stat().st_size > 10**6


@pytest.mark.slow       # the strict build, about 3 s, shared by the module's tests that read the site
def test_the_site_works_opened_from_disk(built):
    """The README says to open site/index.html from disk (file://): every link a page follows names a file (a
    directory's URL shows the browser's listing of it there), none is root-absolute (it would leave the site for
    the disk's root), and the search index is a script, run by search's worker in an iframe (the shim, kept in the
    repository): a file:// page can neither fetch the JSON index nor start a web worker."""
    out = built[0]
    pages = sorted(out.rglob("*.html"))
    link = re.compile(r"<(?:a|link|script|img)\b[^>]*?\b(?:href|src)=\"([^\"#?]*)", re.I)
    for page in pages:
        for target in link.findall(page.read_text()):
            if not target or re.match(r"(?:[a-z]+:|//)", target):
                continue
            assert not target.startswith("/"), (page.relative_to(out), target)
            assert (page.parent / target).is_file(), (page.relative_to(out), target)
    assert (out / "search" / "search_index.js").read_text().startswith("var __index = ")
    assert '<script src="javascripts/iframe-worker/shim.js"></script>' in (out / "index.html").read_text()
