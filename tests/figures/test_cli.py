"""``sgi-figures`` as a user meets it: places it cannot write are one line, before any compute."""
import errno
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from sgi_run.figures import cli
from sgi_run.runner import WriteFailed


@pytest.mark.parametrize("flag", ["--runs-root", "--output"])
def test_an_unwritable_directory_is_refused_in_one_line(flag, tmp_path, capsys):
    args = ["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
            "--output", str(tmp_path / "out")]
    args[args.index(flag) + 1] = "/proc/x"
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: {flag}='/proc/x' is not allowed: a directory sgi-run can write")
    assert err.count("\n") == 1 and not list(tmp_path.rglob("ensemble.h5"))


def test_a_compilation_cache_under_a_home_that_does_not_exist_is_one_line(tmp_path, monkeypatch, capsys):
    """~nouser was a RuntimeError traceback from Path.expanduser as the command set JAX up."""
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("SGI_RUN_COMPILATION_CACHE", "~nouser/x")
    assert cli.main(["--only", "fig4_5", "--runs-root", str(tmp_path / "runs"), "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("sgi-figures: error: SGI_RUN_COMPILATION_CACHE='~nouser/x' is not allowed: a "
                                       "directory to keep compiled programs in (~ for a home this machine has), or off\n")


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    # The queue is the slurm executor's untyped default: the refusal names what was typed (the executor).
    (["--executor", "slurm"], "executor='slurm' is not allowed: one that fits the default executor.queue=None (the SLURM "
                              "partition the workers' jobs go to"),
    (["--executor", "dask", "--executor-option", "workers=0"], "executor.workers=0 is not allowed: 'auto'"),
    (["--executor", "dask", "--executor-option", "nodes=4"], "executor.nodes=4 is not allowed: a known key"),
])
def test_a_bad_executor_is_refused_in_one_line_before_any_compute(args, message, tmp_path, capsys):
    assert cli.main(["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
                     "--output", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["system/kubo.yaml", ""])
def test_a_config_dir_of_built_in_names_or_blank_is_refused_in_one_line(name, tmp_path, capsys):
    """As sgi-run --config-dir (issue 45): a file the built-in one would shadow, or no directory at all."""
    mine = tmp_path / "mine"
    if name:
        (mine / "system").mkdir(parents=True)
        (mine / name).write_text("name: kubo\nnu: 0.9\n")
    assert cli.main(["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
                     "--output", str(tmp_path / "out"), "--config-dir", str(mine) if name else ""]) == 2
    err = capsys.readouterr().err
    says = (f"--config-dir='{mine}' is not allowed: configs of names of their own: its system/kubo.yaml would be "
            "ignored" if name else "--config-dir='' is not allowed: an existing directory")
    assert err.startswith(f"sgi-figures: error: {says}") and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_the_executor_reaches_every_run_of_a_figure_and_leaves_its_hash(tmp_path, monkeypatch):
    """--executor reaches every run of the figure, and a run computed on a cluster is the cache of the
    same run here (the executor is not part of the config hash)."""
    from sgi_run.config import config_hash
    from sgi_run.figures import experiment, pipeline
    [exp] = experiment.discover("experiments", ["fig4_5"])
    here = pipeline.compose_runs(exp, "smoke", str(tmp_path))
    there = pipeline.compose_runs(exp, "smoke", str(tmp_path), executor=["executor=dask",
                                                                            "executor.address=tcp://10.0.0.5:8786"])
    for run_id in exp.runs:
        assert there[run_id].executor.address == "tcp://10.0.0.5:8786" and here[run_id].executor.name == "local"
        assert config_hash(there[run_id]) == config_hash(here[run_id])


# --- issue 24: --only names one figure ----------------------------------------------------------------------
def test_an_id_that_several_papers_have_is_refused_with_the_full_ids(tmp_path, capsys):
    assert cli.main(["--only", "fig1", "--runs-root", str(tmp_path / "runs"), "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("sgi-figures: error: --only='fig1' is not allowed: one figure; fig1 is a "
                                       "figure of 3 papers: ephrati_2023/fig1, gay_balmaz_wu/fig1, luesink_2023/fig1\n")
    assert not (tmp_path / "runs").exists()
    from sgi_run.figures import experiment
    [exp] = experiment.discover("experiments", ["luesink_2023/fig1"])
    assert (exp.paper, exp.figure) == ("luesink_2023", "fig1")
    assert [e.figure for e in experiment.discover("experiments", ["fig4_5", "fig4_5", "ephrati_2023/fig1"])] == \
        ["fig1", "fig4_5"]


def test_an_unknown_id_lists_each_papers_figures_once(tmp_path, capsys):
    assert cli.main(["--only", "fig99", "--runs-root", str(tmp_path / "runs"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    prefix = "sgi-figures: error: --only='fig99' is not allowed: a figure of the built-in papers, as paper: figures; "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    papers = dict(part.split(": ") for part in err[len(prefix):].strip().split("; "))
    assert sorted(papers) == sorted(p.name for p in Path("experiments").iterdir() if p.is_dir())
    assert papers["kraus_tyranowski_2021"].startswith("fig4_1, fig4_2, fig4_3, ")    # in the papers' order
    listed = [(paper, f) for paper, figures in papers.items() for f in figures.split(", ")]
    assert sorted(listed) == sorted((p.parent.name, p.stem) for p in Path("experiments").glob("*/*.yaml"))


# --- issue 24: argument errors are one line, exit status 2 -----------------------------------------------------
@pytest.mark.parametrize("args, line", [
    (["--fidelity", "bogus"], "--fidelity='bogus' is not allowed: one of ['smoke', 'reduced', 'paper']"),
    (["--cache=never"], "--cache='never' is not allowed: one of ['reuse', 'refresh_stale', 'off']"),
    (["--executor", "k8s"], "--executor='k8s' is not allowed: one of ['local', 'dask', 'slurm']"),
    (["--bogus", "x"], "argument='--bogus' is not allowed: a flag of sgi-figures: --help, --fidelity, --only, "
                       "--experiments, --config-dir, --module, --output, --runs-root, --cache, --executor, --executor-option, --strict, --pack, --unpack"),
    (["stray"], "argument='stray' is not allowed: a flag of sgi-figures: --help, --fidelity, --only, "
                "--experiments, --config-dir, --module, --output, --runs-root, --cache, --executor, --executor-option, --strict, --pack, --unpack"),
    (["--only"], "argument --only: expected one argument"),
    (["--ex", "x"], "ambiguous option: --ex could match --experiments, --executor, --executor-option"),
    (["--strict=1"], "argument --strict: ignored explicit argument '1'"),
])
def test_an_argument_error_is_one_line_and_exit_status_2(args, line, tmp_path, capsys):
    assert cli.main([*args, "--runs-root", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr() == ("", f"sgi-figures: error: {line}\n")
    assert not (tmp_path / "runs").exists()


def test_help_is_exit_status_0(capsys):
    assert cli.main(["--help"]) == 0
    assert "--fidelity" in capsys.readouterr().out


@pytest.mark.parametrize("failure, start", [
    (lambda tmp: WriteFailed(tmp / "runs" / "r", OSError(errno.ENOSPC, "No space left on device"), 1, 2),
     "sgi-figures: error: no space left on device in "),
    (lambda tmp: OSError(errno.ENOSPC, "No space left on device", str(tmp / "out" / "fig4_5.png")),
     "sgi-figures: error: cannot write "),
], ids=["a_run", "a_figure_file"])
def test_a_full_disk_is_one_line_and_exit_status_1(failure, start, tmp_path, monkeypatch, capsys):
    from sgi_run.figures import pipeline

    def full(*args, **kwargs):
        raise failure(tmp_path)

    monkeypatch.setattr(pipeline, "make_figure", full)
    assert cli.main(["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
                     "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(start) and err.count("\n") == 1


# --- issue 25: a figure's runs are built once -------------------------------------------------------------------
def test_sgi_figures_builds_each_run_once(tmp_path, capsys, build_calls):
    """Every figure's runs are validated (config.build) before the first computes; each run uses that BuiltConfig."""
    from tests.figures.test_experiments import _variant, two_runs
    (tmp_path / "experiments" / "my_study").mkdir(parents=True)
    _variant(tmp_path / "experiments" / "my_study", lambda spec: [two_runs(spec), spec.update(paper="my_study")])
    assert cli.main(["--experiments", str(tmp_path / "experiments"), "--fidelity", "smoke",
                     "--runs-root", str(tmp_path / "runs"), "--output", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "my_study" / "fig4_1.png").exists() and len(build_calls) == 2


# --- issue 27: paper-fidelity results kept in the repository, across GPU windows --------------------------------
def _figure_args(tmp_path, *extra):
    return ["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
            "--output", str(tmp_path / "out"), *extra]


@pytest.mark.slow
def test_a_made_figure_is_kept_packed_and_unpacked_elsewhere(tmp_path, monkeypatch, capsys):
    """A figure made from exactly its runs is not remade (even with its runs gone: a new GPU window); --pack
    writes its five files as one archive; --unpack puts them into another output directory, whose gallery
    and README then list it with its provenance."""
    import json
    import tarfile

    from sgi_run.figures import pipeline

    monkeypatch.setenv("SGI_RUN_COMMIT", "f" * 40)
    assert cli.main(_figure_args(tmp_path, "--pack", str(tmp_path / "packed"))) == 0
    record = json.loads((tmp_path / "out" / "kraus_tyranowski_2021" / "fig4_5.json").read_text())
    made = record["provenance"]
    assert made["commit"] == "f" * 40 and made["uncommitted_changes"] is None and made["runs"] == 1
    assert made["device"] and made["jax_version"] and made["command"].startswith("sgi-figures --fidelity smoke")
    assert record["papers_counts"] is False and set(record["run_config_hashes"]) == {"initial"}

    def remade(*args, **kwargs):
        raise AssertionError("a kept figure was made again")

    monkeypatch.setattr(pipeline, "make_figure", remade)
    for runs in (tmp_path / "runs").iterdir():
        shutil.rmtree(runs)
    capsys.readouterr()
    assert cli.main(_figure_args(tmp_path, "--pack", str(tmp_path / "packed"))) == 0
    assert "kept: " in capsys.readouterr().out

    archive = tmp_path / "packed" / "kraus_tyranowski_2021-fig4_5.tar.gz"
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == sorted([cli.MANIFEST] + [f"kraus_tyranowski_2021/fig4_5{end}" for end in
                                                (".png", ".pdf", ".svg", ".csv", ".md", "_checks.md", ".json")])
    assert cli.main(["--output", str(tmp_path / "home"), "--unpack", str(archive)]) == 0
    assert "fig4_5.png" in (tmp_path / "home" / "index.html").read_text()
    [row] = [line for line in (tmp_path / "home" / "README.md").read_text().splitlines() if "Figure 4.5" in line]
    assert "| computed at smoke fidelity, not the paper's counts |" in row and "| current |" in row
    assert "7 PASS, 0 FAIL, 0 SKIP" in row and "ffffffffffff" in row


@pytest.mark.slow
def test_a_figure_whose_runs_changed_or_cache_off_is_made_again(tmp_path):
    from sgi_run.figures import experiment, pipeline, records

    assert cli.main(_figure_args(tmp_path)) == 0
    [exp] = experiment.discover("experiments", ["fig4_5"])
    configs = pipeline.compose_runs(exp, "smoke", str(tmp_path / "runs"))
    assert records.kept_record(exp, "smoke", tmp_path / "out", configs, "reuse") is not None
    assert records.kept_record(exp, "smoke", tmp_path / "out", configs, "off") is None
    other = pipeline.compose_runs(exp, "reduced", str(tmp_path / "runs"))
    assert records.kept_record(exp, "reduced", tmp_path / "out", other, "reuse") is None
    # An experiment file whose checks or panels changed (same runs): its verdicts and drawing are made again.
    edited = tmp_path / "fig4_5.yaml"
    edited.write_text(exp.path.read_text().replace("bins: 50,", "bins: 40,", 1))
    assert edited.read_text() != exp.path.read_text()
    changed = experiment.load(edited)
    assert records.kept_record(changed, "smoke", tmp_path / "out", configs, "reuse") is None
    commented = tmp_path / "comment" / "fig4_5.yaml"       # a comment alone changes nothing
    commented.parent.mkdir()
    commented.write_text("# a remark\n" + exp.path.read_text())
    assert records.kept_record(experiment.load(commented), "smoke", tmp_path / "out", configs, "reuse") is not None


def test_an_archive_that_is_not_one_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "x.tar.gz").write_text("not an archive")
    assert cli.main(["--output", str(tmp_path / "out"), "--unpack", str(tmp_path / "x.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sgi-figures: error: --unpack=") and err.count("\n") == 1


def test_a_figure_names_the_commit_its_process_started_at(tmp_path, monkeypatch):
    """A checkout that moves while a long gallery runs (a commit, a merge) does not rename the code that made the
    figures: the commit is read once, when sgi-figures starts."""
    import json

    from sgi_run import provenance
    from sgi_run.figures import pipeline

    moved, run = [], pipeline.run

    def run_while_the_checkout_moves(*args, **kwargs):
        moved.append(True)
        return run(*args, **kwargs)

    monkeypatch.setattr(pipeline, "run", run_while_the_checkout_moves)
    monkeypatch.setattr(provenance, "source_commit",
                        lambda: {"commit": ("b" if moved else "a") * 40, "uncommitted_changes": False})
    assert cli.main(_figure_args(tmp_path)) == 0 and moved
    record = json.loads((tmp_path / "out" / "kraus_tyranowski_2021" / "fig4_5.json").read_text())
    assert record["provenance"]["commit"] == "a" * 40


# --- issue 44: a researcher's own study directory, beside the built-in papers -----------------------------------
def test_a_users_directory_is_read_beside_the_built_in_papers(tmp_path):
    from tests.figures.test_experiments import _variant, two_runs
    study = tmp_path / "mine" / "my_study"
    study.mkdir(parents=True)
    _variant(study, lambda spec: [two_runs(spec), spec.update(paper="my_study")])
    made, listed = cli.chosen_figures([str(tmp_path / "mine")], None)
    assert [(e.paper, e.figure) for e in made] == [("my_study", "fig4_1")] == [(e.paper, e.figure) for e in listed]
    made, _ = cli.chosen_figures([str(tmp_path / "mine")], ["my_study/fig4_1", "luesink_2023/fig1"])
    assert sorted((e.paper, e.figure) for e in made) == [("luesink_2023", "fig1"), ("my_study", "fig4_1")]
    made, listed = cli.chosen_figures([], None)
    assert len(made) == len(listed) == len(list(Path("experiments").glob("*/*.yaml")))


def test_two_files_of_one_figure_id_are_refused(tmp_path, capsys):
    """A user's file of a built-in id would write, and replace, that figure's files: refused before any run."""
    from tests.figures.test_experiments import _variant
    (tmp_path / "mine" / "anything").mkdir(parents=True)
    copy = _variant(tmp_path / "mine" / "anything", lambda spec: None)   # paper: kraus_tyranowski_2021, fig4_1
    assert cli.main(["--experiments", str(tmp_path / "mine"), "--fidelity", "smoke", "--runs-root",
                     str(tmp_path / "runs"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: --experiments='{copy}' is not allowed: one experiment file per "
                          "paper/figure id; kraus_tyranowski_2021/fig4_1 is also ") and err.count("\n") == 1, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "out").exists()


# --- issue 45: the gallery never writes over a user's files -----------------------------------------------------
@pytest.mark.parametrize("output, allowed", [
    ("", "a directory (a non-empty path)"),
    (".", "a directory sgi-figures owns: its README.md was not written by sgi-figures (name a new or empty directory, "
          "e.g. outputs/figures)"),
])
def test_an_output_directory_holding_a_users_readme_is_refused(tmp_path, monkeypatch, capsys, output, allowed):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# my project\n")
    assert cli.main(["--output", output, "--fidelity", "smoke", "--only", "fig4_1", "--runs-root", "runs"]) == 2
    assert capsys.readouterr().err == f"sgi-figures: error: --output={output!r} is not allowed: {allowed}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]
    assert (tmp_path / "README.md").read_text() == "# my project\n"
    assert cli.main(["--output", output, "--unpack", str(tmp_path / "none.tar.gz")]) == 2


def test_the_gallery_rebuilds_its_own_readme_and_index(tmp_path):
    from sgi_run.figures import gallery
    gallery.build(tmp_path)
    first = (tmp_path / "README.md").read_text(), (tmp_path / "index.html").read_text()
    gallery.build(tmp_path)                               # its own files: replaced, whole
    assert ((tmp_path / "README.md").read_text(), (tmp_path / "index.html").read_text()) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "index.html"]    # no partial file left


# --- issue 45: figure files written whole, records that tell when they changed, archives checked -------------------
@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """fig4_5 made once at smoke fidelity: (its run cache, its output directory), for the tests to copy."""
    root = tmp_path_factory.mktemp("made")
    assert cli.main(_figure_args(root)) == 0
    return root / "runs", root / "out"


def _copy_of(made, tmp_path):
    """Arguments that make fig4_5 into a copy of ``made``'s output, from its cached runs; its files there."""
    from sgi_run.figures import experiment, records
    runs, out = made
    shutil.copytree(out, tmp_path / "out")
    [exp] = experiment.discover("experiments", ["fig4_5"])
    args = ["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(runs), "--output", str(tmp_path / "out")]
    return args, records.figure_files(exp, tmp_path / "out")


def _as_written(files) -> bool:
    from sgi_run.figures import records
    directory = files["json"].parent
    return records.figure_fault(records.read_record(files["json"]), records.files_in(directory),
                                   directory) is None


@pytest.mark.slow
def test_a_full_disk_while_a_figure_is_updated_leaves_its_old_files_whole(made, tmp_path, monkeypatch, capsys):
    """The PNG cut short by a full disk (49152 bytes) is not left beside the old record: every file of the figure
    stays as it was, and the same command then keeps the figure whole."""
    from sgi_run.figures import plots
    args, files = _copy_of(made, tmp_path)
    before = {key: path.read_bytes() for key, path in files.items()}

    def disk_full(path):
        with open(path, "r+b") as png:
            png.truncate(49152)
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(plots, "compact_png", disk_full)
    capsys.readouterr()
    assert cli.main([*args, "--cache", "off"]) == 1        # the runs are made again, and the figure
    assert {key: path.read_bytes() for key, path in files.items()} == before
    assert not [p for p in (tmp_path / "out").rglob("*") if ".partial" in p.name]
    err = capsys.readouterr().err                            # after the runs' own progress lines
    assert err.endswith(f"\nsgi-figures: error: cannot write {files['png']} (No space left on device); the "
                        "figure's files there are as they were, finished runs are kept, the same command goes on "
                        "from them\n")
    monkeypatch.undo()
    assert cli.main(args) == 0 and "    kept: " in capsys.readouterr().out and _as_written(files)


@pytest.mark.slow
@pytest.mark.parametrize("damage, line", [
    # What the full disk left before figure files were written whole: a PNG cut short beside its old record.
    (lambda files: files["png"].write_bytes(files["png"].read_bytes()[:49152]),
     "fig4_5.png is not the file its record was written with (its sha256 differs)"),
    (lambda files: files["pdf"].unlink(), "fig4_5.pdf is missing"),
    (lambda files: files["json"].write_text(files["json"].read_text().replace('"verdict": "PASS"',
                                                                              '"verdict": "FAIL"', 1)),
     "fig4_5.json was changed after sgi-figures wrote it (its digest does not match)"),
], ids=["a_png_cut_short", "a_file_missing", "a_verdict_edited_by_hand"])
def test_a_figure_whose_files_are_not_as_written_is_made_again(damage, line, made, tmp_path, capsys):
    args, files = _copy_of(made, tmp_path)
    damage(files)
    capsys.readouterr()
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert f"    made again: {files['json'].parent}/{line}\n" in out and "kept: " not in out
    record = json.loads(files["json"].read_text())
    assert _as_written(files) and all(c["verdict"] == "PASS" for c in record["checks"])


def _written_figure(directory, png=b"\x89PNG the figure"):
    from tests.figures.test_pipeline import _written_figure as written
    return written(directory, png)


def _members(archive) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def _tar(path, members: dict[str, bytes], links=()):
    """An archive of ``members`` as given (and symbolic links: name -> target), as anyone may make one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return path


def _manifest(members: dict[str, bytes]) -> dict[str, bytes]:
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    return {cli.MANIFEST: json.dumps({"sha256": digests}).encode(), **members}


def _edited_record(members):
    record = "my_study/fig1.json"
    return _manifest({**{n: d for n, d in members.items() if n != cli.MANIFEST},
                      record: members[record].replace(b'"PASS"', b'"FAIL"')})


@pytest.mark.parametrize("craft, why", [
    # The hostile tester's: one member over a real figure's PNG, holding text.
    (lambda members: {"my_study/fig1.png": b"not a figure"}, "it has no sgi-figures-manifest.json"),
    (lambda members: {**members, "my_study/fig1.png": b"\x89PNG another figure"},
     "my_study/fig1.png differs from its manifest's sha256"),
    (lambda members: {**members, "my_study/notes.txt": b"mine"}, "my_study/notes.txt is not in its manifest"),
    (lambda members: _manifest({"../fig1.png": b"\x89PNG"}), "../fig1.png is no <paper>/<file> of an output directory"),
    (_edited_record, "my_study/fig1.json was changed after sgi-figures wrote it (its digest does not match)"),
], ids=["no_manifest", "a_member_changed", "a_member_not_listed", "a_path_out_of_the_output", "an_edited_record"])
def test_an_archive_pack_did_not_write_is_refused_and_replaces_nothing(craft, why, tmp_path, capsys):
    files = _written_figure(tmp_path / "out")
    before = {path: path.read_bytes() for path in files.values()}
    packed = cli.pack(_written_figure(tmp_path / "there", b"\x89PNG the figure made there"), tmp_path / "x.tar.gz")
    odd = _tar(tmp_path / "odd.tar.gz", craft(_members(packed)))
    assert cli.main(["--output", str(tmp_path / "out"), "--unpack", str(odd)]) == 2
    assert capsys.readouterr().err == (f"sgi-figures: error: --unpack='{odd}' is not allowed: an archive "
                                       f"sgi-figures --pack wrote ({why})\n")
    assert {path: path.read_bytes() for path in files.values()} == before
    assert sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "out").rglob("*")) == [
        "out/my_study", "out/my_study/fig1.json", "out/my_study/fig1.md", "out/my_study/fig1.png"]


def test_an_archive_with_a_link_is_refused(tmp_path, capsys):
    odd = _tar(tmp_path / "odd.tar.gz", {}, links=[("my_study/fig1.png", "/etc/passwd")])
    assert cli.main(["--output", str(tmp_path / "out"), "--unpack", str(odd)]) == 2
    assert capsys.readouterr().err.endswith("sgi-figures --pack wrote (my_study/fig1.png is not one plain file)\n")
    assert not (tmp_path / "out" / "my_study").exists()


def test_unpack_replaces_only_the_files_sgi_figures_wrote_of_that_figure(tmp_path, capsys):
    """An archive goes where --output has none of its files, or that figure's as sgi-figures wrote them (an
    earlier version of it); a file of the user's there, or one changed since, is refused, and nothing is written."""
    packed = cli.pack(_written_figure(tmp_path / "there", b"\x89PNG the new figure"), tmp_path / "new.tar.gz")
    home = tmp_path / "home"
    old = _written_figure(home, b"\x89PNG the old figure")
    assert cli.main(["--output", str(home), "--unpack", str(packed)]) == 0      # an update of its own figure
    assert old["png"].read_bytes() == b"\x89PNG the new figure" and _as_written(old)
    assert cli.main(["--output", str(home), "--unpack", str(packed)]) == 0      # the same files again

    _written_figure(home, b"\x89PNG the old figure")["md"].unlink()        # its files, one gone since
    capsys.readouterr()
    assert cli.main(["--output", str(home), "--unpack", str(packed)]) == 2
    assert capsys.readouterr().err == (
        f"sgi-figures: error: --unpack='{packed}' is not allowed: an archive whose figure replaces only files "
        f"sgi-figures wrote in --output ({old['png']} would be replaced, and {old['md']} is missing; move them "
        "away to unpack it)\n")
    old["png"].write_bytes(b"\x89PNG changed by hand")     # the user's PNG, and no record of its figure
    old["json"].unlink()
    assert cli.main(["--output", str(home), "--unpack", str(packed)]) == 2
    assert f"({old['png']} would be replaced, and no record sgi-figures wrote lists it;" in capsys.readouterr().err
    assert old["png"].read_bytes() == b"\x89PNG changed by hand" and not old["md"].exists()


def test_two_archives_of_one_figure_are_refused(tmp_path, capsys):
    first = cli.pack(_written_figure(tmp_path / "a"), tmp_path / "a.tar.gz")
    second = cli.pack(_written_figure(tmp_path / "b", b"\x89PNG other"), tmp_path / "b.tar.gz")
    assert cli.main(["--output", str(tmp_path / "out"), "--unpack", str(first), str(second)]) == 2
    assert capsys.readouterr().err == (f"sgi-figures: error: --unpack='{second}' is not allowed: one archive per "
                                       f"figure (my_study/fig1.json is also in {first})\n")
    assert not (tmp_path / "out" / "my_study").exists()


@pytest.mark.parametrize("pack_dir, allowed", [
    (lambda tmp: "/proc/x", "a directory sgi-run can write (No such file or directory: /proc/x)"),
    (lambda tmp: str(tmp / "a_file"), "a directory sgi-run can write (File exists: {tmp}/a_file)"),
    (lambda tmp: str(tmp / "packed"), "a directory whose kraus_tyranowski_2021-fig4_5.tar.gz, if any, is an "
                                      "archive sgi-figures --pack wrote (it has no sgi-figures-manifest.json); move "
                                      "it away"),
    (lambda tmp: "", "a directory (a non-empty path)"),
], ids=["unwritable", "an_existing_file", "a_users_file_under_the_archives_name", "no_path"])
def test_a_pack_directory_is_refused_in_one_line_before_any_compute(pack_dir, allowed, tmp_path, capsys):
    (tmp_path / "a_file").write_text("mine")
    _tar(tmp_path / "packed" / "kraus_tyranowski_2021-fig4_5.tar.gz", {"mine.txt": b"mine"})
    value = pack_dir(tmp_path)
    assert cli.main(_figure_args(tmp_path, "--pack", value)) == 2
    assert capsys.readouterr().err == (f"sgi-figures: error: --pack={value!r} is not allowed: "
                                       f"{allowed.format(tmp=tmp_path)}\n")
    assert not list(tmp_path.rglob("ensemble.h5")) and (tmp_path / "a_file").read_text() == "mine"
    assert _members(tmp_path / "packed" / "kraus_tyranowski_2021-fig4_5.tar.gz") == {"mine.txt": b"mine"}
