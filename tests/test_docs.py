"""The repository stands alone: what README.md and docs/ point at is in it, and what they tell a
user to install exists."""
import re
import tomllib

from tests.conftest import ROOT


def test_the_reading_path_is_an_extra_the_tests_install():
    """README: ``pip install 'sgi-run[read]'`` gives xarray and h5netcdf (Ensemble.to_xarray, netCDF readers)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {re.split("[<>=]", r)[0] for r in extras["read"]} == {"xarray", "h5netcdf"}
    assert "sgi-run[read]" in extras["test"]
    assert "pip install 'sgi-run[read]'" in (ROOT / "README.md").read_text()


def relative_links(markdown: str) -> list[str]:
    """The targets of markdown links and of paths quoted as links (``../x``, ``docs/x``) that are not URLs."""
    targets = re.findall(r"\]\(([^)\s]+)\)", markdown) + re.findall(r"`((?:\.\./|docs/)[^`\s]*)`", markdown)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_every_relative_link_in_the_documentation_is_in_the_repository():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(documents) > 2
    for document in documents:
        for target in relative_links(document.read_text()):
            resolved = (document.parent / target).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{document.relative_to(ROOT)} links {target}"
