"""The suite end to end at smoke fidelity: every fitting cell measured against one shared reference, the claims
checked, the results written; an interrupted suite keeps the systems it finished and goes on from them."""
import json
import math

import h5py
import pytest

from sgi_run.bench import cli, run, suite
from sgi_run.bench import results as results_mod
from sgi_run.bench.cells import Cell, cells_of, integrator_options
from sgi_run.integrators.claims import claims_of

SYSTEMS = ["kubo_undamped", "heavy_top"]       # the suite's order
# A few methods of each kind keep the test within its budget; every option as a cell is test_cells' test.
METHODS = ["midpoint", "heun", "rs2", "tmk", "lp_midpoint", "csvia"]


def test_every_method_of_a_system_shares_its_plan_and_reference():
    s = suite.read()
    entry, fidelity = s.systems["rigid_body"], s.fidelity("smoke")
    a = run.study_overrides(entry, Cell("rigid_body", "tmk", True, noise_kind="gaussian"), fidelity)
    b = run.study_overrides(entry, Cell("rigid_body", "isomp", True, noise_kind="gaussian"), fidelity)
    differ = set(a) ^ set(b)
    assert differ == {"integrator=tmk", "integrator=isomp"}
    assert "plan.reference_method=tmk" in a and "plan.reference=fine" in a
    weak = run.study_overrides(entry, Cell("rigid_body", "srkw1", True, noise_kind="three_point"), fidelity)
    assert "plan.error=weak" in weak and "plan.reference_method=tmk" in weak
    kubo = run.study_overrides(s.systems["kubo_undamped"], Cell("k", "heun", True, noise_kind="gaussian"), fidelity)
    assert "plan.reference=exact" in kubo and not any("reference_method" in o for o in kubo)


@pytest.mark.slow
def test_the_smoke_suite_runs_is_interrupted_and_goes_on(tmp_path):
    out, runs = tmp_path / "bench", str(tmp_path / "runs")
    chosen = suite.read().only(SYSTEMS)

    def stop_after_the_first(done, complete, wall_s):
        results_mod.write(out, done, fidelity="smoke", complete=complete, wall_s=wall_s, provenance={})
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run.run_suite(chosen, "smoke", stop_after_the_first, runs_root=runs, methods=METHODS, log=lambda line: None)
    kept = results_mod.read(out)
    assert not kept["complete"] and [s["name"] for s in kept["systems"]] == SYSTEMS[:1]

    assert cli.main(["--fidelity", "smoke", "--systems", ",".join(SYSTEMS), "--output", str(out),
                     "--runs-root", runs, "--methods", ",".join(METHODS)]) == 0
    record = results_mod.read(out)
    assert record["complete"] and [s["name"] for s in record["systems"]] == SYSTEMS
    kubo, top = record["systems"]
    assert all(c["cached"] for c in kubo["cells"] if c["fits"]), "the finished system's studies are reused"
    assert not any(c["cached"] for c in top["cells"] if c["fits"])

    # Every method asked for is a cell of each system, fitting or with its reason.
    for system in record["systems"]:
        assert [c["integrator"] for c in system["cells"]] == METHODS
        assert all(c["reason"] for c in system["cells"] if not c["fits"])
    assert {c["integrator"] for c in top["cells"] if c["fits"]} == {"lp_midpoint", "tmk"}
    cells = {c["integrator"]: c for c in kubo["cells"]}
    # Kubo's exact solution is the reference; a weak method gets a weak study only.
    assert cells["rs2"]["strong_verdict"] == "NOT MEASURED" and cells["rs2"]["weak_verdict"] != "NOT MEASURED"
    # The midpoint rule keeps Kubo's quadratic H to round-off; TMK keeps the heavy top's Casimirs, and so does the
    # midpoint rule on the Lie-Poisson equation (they are quadratic).
    assert cells["midpoint"]["invariant_verdict"] == "PASS" and cells["midpoint"]["largest_drift"] < 1e-12
    assert cells["heun"]["invariant_verdict"] == "NO CLAIM" and cells["heun"]["largest_drift"] > 1e-8
    kept = {c["integrator"]: c["invariant_verdict"] for c in top["cells"] if c["fits"]}
    assert kept == {"tmk": "PASS", "lp_midpoint": "PASS"}
    # Every verdict is one the page knows how to show, and each order comes with its claim.
    for c in kubo["cells"] + top["cells"]:
        if c["fits"] and c["strong_verdict"] in ("PASS", "FAIL"):
            assert c["strong_claimed"] is not None and math.isfinite(c["strong_order"])

    rows = (out / "results.csv").read_text().splitlines()
    fitting = sum(c["fits"] for s in record["systems"] for c in s["cells"])
    apart = sum(not c["fits"] for s in record["systems"] for c in s["cells"])
    levels = suite.read().fidelity("smoke").levels
    assert len(rows) == 1 + fitting * levels + apart
    with h5py.File(out / "results.h5") as f:
        assert f["rows/dt"].shape == (len(rows) - 1,) and f.attrs["complete"]
    assert (out / "kubo_undamped.png").stat().st_size > 0 and (out / "heavy_top.svg").exists()
    json.dumps(record, allow_nan=False)


def test_an_output_directory_of_someone_elses_files_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["--fidelity", "smoke", "--systems", "kubo_undamped", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output" in err
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("argv, key", [
    (["--fidelity", "huge"], "--fidelity"),
    (["--systems", "nonesuch"], "--systems"),
    (["--system", "nonesuch"], "--system"),
    (["--system", "kubo", "--dts", "a,b"], "--dts"),
])
def test_bad_input_is_one_line(argv, key, capsys, tmp_path):
    assert cli.main([*argv, "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and key in err


@pytest.mark.slow
def test_a_formula_system_of_ones_own_is_benchmarked_by_one_command(tmp_path):
    mine = tmp_path / "duffing.yaml"
    mine.write_text("name: custom\nH: p**2/2 + q**4/4 - q**2/2\nnoise: [0.1*q**2]\nF: null\nnoise_forcing: null\n"
                    "dof: 1\nq0: 1.0\np0: 0.0\n")
    out = tmp_path / "bench"
    assert cli.main(["--system", str(mine), "--fidelity", "smoke", "--methods", "heun,midpoint,tmk", "--output",
                     str(out), "--runs-root", str(tmp_path / "runs")]) == 0
    system, = results_mod.read(out)["systems"]
    assert system["name"] == "duffing" and system["facts"]["noise_class"] == "commutative"
    # No exact path: the reference is the first option (registry order) among the fitting Gaussian methods that
    # claim the highest strong order for commuting noise.
    fitting = [c.integrator for c in cells_of("d", ["system=kubo"], integrator_options()) if c.fits
               and c.error_kind == "strong"]
    orders = {m: claims_of(m).order("strong", "commutative") or 0.0 for m in fitting}
    assert system["reference"].split()[0] == next(m for m in fitting if orders[m] == max(orders.values()))
    cells = {c["integrator"]: c for c in system["cells"]}
    assert cells["heun"]["fits"] and cells["midpoint"]["fits"] and not cells["tmk"]["fits"]
    assert all(math.isfinite(c["strong_order"]) for c in system["cells"] if c["fits"])
