"""A formula system's fields as it keeps them (sgi_run/systems/formula/parameters.py): converted on their way into
the frozen dataclass, never changed after, its compiled formulas derived from them once."""
import dataclasses
import pickle

import pytest

from sgi_run.systems.formula import FormulaSystem, LiePoissonFormulaSystem


def _system(**keys):
    return FormulaSystem(H="(p1**2 + p2**2)/2 + k*q1", noise=("0.1*p1",), dof=2, **keys)


def test_fields_given_as_lists_or_integers_are_kept_as_the_config_gives_them():
    system = _system(q0=[1, "0.1*xi1"], p0=0, parameters=[("k", 2)])
    assert system.q0 == (1.0, "0.1*xi1") and isinstance(system.q0[0], float)
    assert system.p0 == 0.0 and isinstance(system.p0, float)
    assert system.parameters == (("k", 2.0),) and isinstance(system.parameters[0][1], float)
    assert system == _system(q0=(1.0, "0.1*xi1"), p0=0.0, parameters=(("k", 2.0),))
    assert hash(system) == hash(_system(q0=(1.0, "0.1*xi1"), p0=0.0, parameters=(("k", 2.0),)))
    assert dataclasses.replace(system, q0=[3, 4]).q0 == (3.0, 4.0)
    assert [f.default for f in dataclasses.fields(FormulaSystem) if f.name in ("q0", "p0", "parameters")] == [1.0, 0.0, ()]
    assert LiePoissonFormulaSystem(pi0=[1, 0, 0]).pi0 == (1.0, 0.0, 0.0)
    assert LiePoissonFormulaSystem().gamma0 is None


def test_a_system_is_frozen_and_compiles_its_formulas_once():
    system = _system(q0=(1.0, 0.0), p0=0.0, parameters=(("k", 2.0),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        system.q0 = (0.0, 0.0)
    assert system._compiled is system._compiled
    again = pickle.loads(pickle.dumps(system))
    assert again == system and again._compiled is not system._compiled
