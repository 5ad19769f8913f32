"""Every bundled integrator states what it claims (orders per noise class, invariants kept), and the claims are
metadata: validated, but never built into the method nor part of a run's config hash."""
import math

import pytest
import yaml

import sgi_run
from sgi_run.composition import ConfigSource, group_options
from sgi_run.config import build, compose, config_hash
from sgi_run.core.errors import ConfigError
from sgi_run.integrators.claims import KEEPS, NOISE_CLASSES, ORDER_KINDS, Claims, claims_of

from tests.conftest import ROOT

OPTIONS = group_options("integrator")
GOOD = {"strong": {"additive": 1, "commutative": 1, "general": 0.5},
        "weak": {"additive": 1, "commutative": 1, "general": 1},
        "keeps": ["quadratic"], "source": "Kraus & Tyranowski (2021), Theorem 3.5"}


def test_the_bundled_options_are_the_files():
    assert OPTIONS and set(OPTIONS) == {p.stem for p in (ROOT / "conf" / "integrator").glob("*.yaml")}


@pytest.mark.parametrize("name", OPTIONS)
def test_every_bundled_method_states_well_formed_claims(name):
    assert "claims" in yaml.safe_load((ROOT / "conf" / "integrator" / f"{name}.yaml").read_text())
    claims = claims_of(name)
    assert claims != Claims.none() and claims.source.strip()
    for kind in ORDER_KINDS:
        assert set(getattr(claims, kind)) == set(NOISE_CLASSES)
        assert all(order is None or (math.isfinite(order) and order > 0) for order in getattr(claims, kind).values())
    assert any(claims.order("weak", c) is not None for c in NOISE_CLASSES)     # every method claims a weak order
    assert set(claims.keeps) <= set(KEEPS)


@pytest.mark.parametrize("name", OPTIONS)
def test_a_method_claims_a_strong_order_exactly_when_it_draws_brownian_increments(name):
    """Three-point variables approximate the law, not the path: a weak-only method makes no strong claim."""
    claims = claims_of(name)
    weak_only = sgi_run.integrator(name).noise_kind == "three_point"
    assert all(v is None for v in claims.strong.values()) == weak_only
    for c in NOISE_CLASSES:     # a mean-square method converges weakly at least as fast as strongly
        strong, weak = claims.order("strong", c), claims.order("weak", c)
        assert strong is None or (weak is not None and weak >= strong)


def test_the_claims_read_as_written():
    midpoint, srkw2 = claims_of("midpoint"), claims_of("srkw2")
    assert dict(midpoint.strong) == {"additive": 1.0, "commutative": 1.0, "general": 0.5}
    assert midpoint.order("weak", "general") == 1.0 and midpoint.keeps == ("quadratic",)
    assert srkw2.order("strong", "commutative") is None and srkw2.order("weak", "commutative") == 2.0
    assert claims_of("tmk").keeps == ("casimirs",)
    again = Claims.from_config(midpoint.config())
    assert again == midpoint and hash(again) == hash(midpoint)


@pytest.mark.parametrize("name", ["midpoint", "dirk", "srkw1", "srkw2"])
def test_a_method_keeping_quadratic_invariants_keeps_the_undamped_kubo_energy(name, tmp_path):
    """(q^2 + p^2)/2 is a quadratic first integral of the Kubo oscillator without damping."""
    from sgi_run.systems import Kubo
    assert "quadratic" in claims_of(name).keeps
    result = sgi_run.simulate(Kubo(nu=0.0), name, sgi_run.plan(paths=8, T=4.0, dt=0.25), output_root=tmp_path)
    assert max(abs(result.ensemble.mean("H") - 2.0)) < 1e-10


def _one_line(make):
    with pytest.raises(ConfigError) as err:
        make()
    assert "\n" not in str(err.value)
    return err.value


@pytest.mark.parametrize("change, key", [
    ({"strong": {**GOOD["strong"], "general": 0}}, "integrator.claims.strong.general"),
    ({"strong": {**GOOD["strong"], "general": -1}}, "integrator.claims.strong.general"),
    ({"weak": {**GOOD["weak"], "additive": "abc"}}, "integrator.claims.weak.additive"),
    ({"weak": {**GOOD["weak"], "additive": True}}, "integrator.claims.weak.additive"),
    ({"weak": {**GOOD["weak"], "additive": float("inf")}}, "integrator.claims.weak.additive"),
    ({"strong": {"additive": 1, "commutative": 1}}, "integrator.claims.strong.general"),
    ({"strong": {**GOOD["strong"], "multiplicative": 1}}, "integrator.claims.strong.multiplicative"),
    ({"weak": [1, 1, 1]}, "integrator.claims.weak"),
    ({"weak": None}, "integrator.claims.weak"),
    ({"keeps": ["energy"]}, "integrator.claims.keeps"),
    ({"keeps": ["quadratic", "quadratic"]}, "integrator.claims.keeps"),
    ({"keeps": "quadratic"}, "integrator.claims.keeps"),
    ({"source": ""}, "integrator.claims.source"),
    ({"source": None}, "integrator.claims.source"),
    ({"orders": 1}, "integrator.claims.orders")])
def test_a_malformed_claim_is_refused_in_one_line_naming_its_key(change, key):
    err = _one_line(lambda: Claims.from_config({**GOOD, **change}))
    assert err.key == key


def test_claims_that_are_no_mapping_are_refused():
    assert _one_line(lambda: Claims.from_config([1, 2])).key == "integrator.claims"
    assert Claims.from_config(None) == Claims.none()


def test_order_refuses_an_unknown_kind_or_class():
    assert _one_line(lambda: claims_of("midpoint").order("mean", "general")).key == "kind"
    assert _one_line(lambda: claims_of("midpoint").order("strong", "scalar")).key == "noise_class"
    assert _one_line(lambda: claims_of("rk4")).key == "integrator"


@pytest.mark.parametrize("override, key", [
    ("integrator.claims.strong.general=2x", "integrator.claims.strong.general"),
    ("integrator.claims.strong.general=0", "integrator.claims.strong.general"),
    ("integrator.claims.keeps=[energy]", "integrator.claims.keeps"),
    ("+integrator.claims.strong.scalar=1", "integrator.claims.strong.scalar")])
def test_a_claim_on_the_command_line_is_validated(override, key):
    assert _one_line(lambda: compose([override])).key == key


def test_the_config_hash_ignores_the_claims():
    default = compose([])
    # The hash of the default config before the claims existed: every run made before keeps its identity.
    assert config_hash(default) == "f7595c3a9b5f"
    assert config_hash(compose(["integrator.claims.strong.general=2"])) == config_hash(default)
    assert config_hash(compose(["integrator.claims=null"])) == config_hash(default)
    assert config_hash(compose(["integrator.tol=1e-10"])) != config_hash(default)
    # An integrator object's node (built without its claims) is the same run as the command line's.
    from omegaconf import OmegaConf
    node = sgi_run.integrators.integrator_config(build(default).integrator)
    assert "claims" not in node and "claims" in default.integrator
    rebuilt = OmegaConf.create({**OmegaConf.to_container(default), "integrator": node})
    assert config_hash(rebuilt) == config_hash(default)


def test_make_integrator_never_sees_the_claims(monkeypatch):
    import sgi_run.config as config
    seen = []
    real = config.make_integrator

    def spy(cfg):
        seen.append(dict(cfg))
        return real(cfg)

    monkeypatch.setattr(config, "make_integrator", spy)
    integrator = build(compose(["integrator=dirk", "integrator.claims.weak.general=3"])).integrator
    sgi_run.integrator("midpoint")
    assert {node["name"] for node in seen} == {"dirk", "midpoint"} and not any("claims" in node for node in seen)
    from sgi_run.integrators import integrator_config
    assert integrator_config(integrator) == integrator_config(sgi_run.integrator("dirk"))    # the same method


def test_a_method_of_ones_own_without_claims_claims_nothing(tmp_path):
    node = yaml.safe_load((ROOT / "conf" / "integrator" / "midpoint.yaml").read_text())
    del node["claims"]
    (tmp_path / "integrator").mkdir()
    (tmp_path / "integrator" / "mine.yaml").write_text(yaml.safe_dump({**node, "name": "mine"}))
    source = ConfigSource(added=str(tmp_path))
    assert claims_of("mine", source) == Claims.none()
    assert all(claims_of("mine", source).order(k, c) is None for k in ORDER_KINDS for c in NOISE_CLASSES)
    assert compose(["integrator=mine"], source).integrator.name == "mine"
