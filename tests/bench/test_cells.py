"""Which pairs fit (the product's own rule, from the registry) and what a system's claims are checked against."""
from sgi_run.bench import cells
from sgi_run.composition import group_options
from sgi_run.config import compose_setup


def _system(*overrides):
    fitting = [c for c in cells.cells_of("s", overrides, cells.integrator_options()) if c.fits]
    return compose_setup([*overrides, f"integrator={fitting[0].integrator}"])[1].system


def test_every_integrator_option_is_a_cell_fitting_exactly_when_sgi_run_builds_it():
    options = cells.integrator_options()
    assert options == group_options("integrator")
    rigid = {c.integrator: c for c in cells.cells_of("rb", ["system=rigid_body"], options)}
    assert set(rigid) == set(options)
    assert {o for o, c in rigid.items() if c.fits} >= {"tmk", "lp_midpoint", "isomp"}
    assert not rigid["midpoint"].fits and "lie_poisson" in rigid["midpoint"].reason
    kubo = {c.integrator: c for c in cells.cells_of("k", ["system=kubo"], options)}
    assert kubo["midpoint"].fits and not kubo["tmk"].fits and not kubo["svia"].fits
    assert kubo["srkw1"].error_kind == "weak" and kubo["midpoint"].error_kind == "strong"


def test_noise_classes_are_read_off_the_noise_fields():
    assert cells.noise_class(_system("system=langevin_harmonic")) == "additive"
    assert cells.noise_class(_system("system=kubo")) == "commutative"             # one multiplicative noise
    assert cells.noise_class(_system("system=rigid_body_gay_balmaz_wu", "system.R0=null")) == "general"
    assert cells.noise_class(_system("system=rigid_body", "system.noise_kind=vector")) == "commutative"


def test_quadratic_invariants_are_found_and_higher_casimirs_are_not():
    assert cells.quadratic_invariants(_system("system=kubo", "system.nu=0")) == ("H",)
    manakov = _system("system=manakov", "system.n=4")
    assert manakov.invariants() == ("C2", "C4") and cells.quadratic_invariants(manakov) == ("C2",)
