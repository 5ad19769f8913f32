"""sgi_run.figures.records: a figure's record is stale for its numerics code only where the code of its own runs
changed (``code_changed``)."""
from sgi_run import provenance
from sgi_run.figures import records
from sgi_run.runner import code_digest_of


def _record(numerics_code: str, **runs) -> dict:
    return {"provenance": {"numerics_code": numerics_code},
            "run_code": {run_id: {"system": system, "integrator_family": family, "code_digest": digest}
                         for run_id, (system, family, digest) in runs.items()}}


def test_a_record_drawn_by_todays_numerics_code_is_current():
    assert not records.code_changed(_record(provenance.code_digest()))
    assert records.stale_reasons(_record(provenance.code_digest()), None) == []


def test_other_numerics_code_marks_a_record_stale_only_where_its_runs_code_changed():
    kubo = ("kubo", "explicit_srk", code_digest_of("kubo", "explicit_srk"))
    zeitlin = ("zeitlin_euler", "lie_poisson", code_digest_of("zeitlin_euler", "lie_poisson"))
    assert not records.code_changed(_record("000000000000", a=kubo, b=zeitlin))     # another system's code changed
    assert records.code_changed(_record("000000000000", a=kubo, b=(*zeitlin[:2], "0123456789ab")))
    assert records.stale_reasons(_record("000000000000", a=(*kubo[:2], "0123456789ab")), None) == [
        "the numerics code was changed after it was drawn"]


def test_a_record_that_cannot_say_its_runs_code_is_stale_when_any_numerics_code_changed():
    assert records.code_changed({"provenance": {"numerics_code": "000000000000"}})       # drawn before run_code
    assert records.code_changed(_record("000000000000", a=("no_such_system", "explicit_srk", "0123456789ab")))
    assert records.code_changed(_record("000000000000", a=("kubo", "no_such_family", "0123456789ab")))


def test_a_record_drawn_today_from_a_run_cached_by_other_code_is_stale():
    """A run reused from the cache (cache=reuse) keeps the digest of the code that computed it: the figure drawn
    from it today is not current, though today's code drew it."""
    kubo = ("kubo", "explicit_srk", code_digest_of("kubo", "explicit_srk"))
    assert not records.code_changed(_record(provenance.code_digest(), a=kubo))
    assert records.code_changed(_record(provenance.code_digest(), a=(*kubo[:2], "0123456789ab")))
