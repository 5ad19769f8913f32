"""The registry of check kinds, and what every kind shares: its record (the function and the side facts
``validate`` refuses a spec by), the refusal of a spec before any compute, and the verdict of one check."""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from collections.abc import Callable, Collection, Mapping

from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import is_number
from sgi_run.figures.results import (FAIL, PASS, SKIP, Band, CheckResult, Measurement, RunData, Series, StudyData,
                                     as_run_data)


# --- the registry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckKind:
    """One registered check kind: its function (whose signature is its schema) and what ``validate`` needs
    beyond the signature.

    ``study``: it judges a convergence study, not a mean curve. ``choices``: parameters that name one of a
    few things (parameter -> the allowed names). ``shapes``: parameters of a given shape (parameter ->
    (a predicate, what they must be)). ``needs_system_method`` / ``needs_integrator_method``: what the kind
    calls on its run's system or integrator, as a refusal names it (``name(arguments)``), refused before any
    compute where they have none."""
    fn: Callable[..., Measurement]
    study: bool = False
    choices: Mapping[str, Collection] = field(default_factory=dict)
    shapes: Mapping[str, tuple[Callable[[object], bool], str]] = field(default_factory=dict)
    needs_system_method: str | None = None
    needs_integrator_method: str | None = None
    quantity: str = ""       # what its value is, as a verdict line names it ("p", "E/exact"); a Measurement may say
    unit: str = ""           # more ... and its unit ("SE", "paths"); every kind says one or the other


CHECK_KINDS: dict[str, CheckKind] = {}
# In a kind's ``quantity`` (and a measurement's detail), the name of the observable the check reads
# ("max_t |{x} - {x}(0)|" of C1 reads "max_t |C1 - C1(0)|"); ``evaluate`` fills it in.
OBSERVABLE = "{x}"


def check_kind(name: str, study: bool = False, choices: Mapping[str, Collection] | None = None,
               shapes: Mapping[str, tuple[Callable[[object], bool], str]] | None = None,
               needs_system_method: str | None = None, needs_integrator_method: str | None = None,
               quantity: str = "", unit: str = ""):
    """Register a kind; ``quantity`` / ``unit``: what its value is and in what unit, so that a verdict line never
    shows a bare number ("p = 0.91", "0.28 SE")."""
    def register(fn):
        CHECK_KINDS[name] = CheckKind(fn, study, choices or {}, shapes or {}, needs_system_method,
                                      needs_integrator_method, quantity, unit)
        return fn
    return register


def kinds_for(study: bool) -> list[str]:
    """The check kinds for a convergence study (``study``) or for an ensemble run."""
    return sorted(k for k, record in CHECK_KINDS.items() if record.study == study)


def kind_mismatch(run: str, study: bool) -> str:
    """What is allowed instead of a kind that does not fit the run (a ``study`` or not)."""
    if study:
        return f"a check kind for a convergence study (run {run} is one: plan=convergence): {kinds_for(True)}"
    return f"a check kind for an ensemble run (run {run} is not a convergence study): {kinds_for(False)}"


def _skip(t, series: Series, band: Band) -> Measurement:
    return Measurement(math.nan, None, t, band, skipped=f"t={t:g} is not an output time of this run (T={series.t[-1]:g})")


# --- evaluation -----------------------------------------------------------------------------------
_NOT_PARAMETERS = ("id", "kind", "run", "runs", "criterion", "observable", "tolerance_se", "by_construction")
_FILLED_IN = ("series", "study", "data")   # supplied by evaluate, never written in a check


def parameters(spec: Mapping) -> dict:
    return {k: v for k, v in spec.items() if k not in _NOT_PARAMETERS}


_TYPES = {"float": "a number", "float | None": "a number or null", "int": "an integer",
          "int | None": "an integer or null", "bool": "true or false", "str": "a name", "str | None": "a name or null"}


def _typed(value, annotation: str) -> bool:
    """Whether ``value`` is of a parameter's simple annotated type (other annotations: anything)."""
    if value is None:
        return annotation not in _TYPES or annotation.endswith("| None")
    # NaN compares false with everything: a band or a tolerance of NaN would judge nothing.
    number = is_number(value) and not math.isnan(value)
    return {"float": number, "float | None": number, "bool": isinstance(value, bool),
            "int": number and float(value).is_integer(), "int | None": number and float(value).is_integer(),
            "str": isinstance(value, str), "str | None": isinstance(value, str)}.get(annotation, True)


def validate(spec: Mapping, where: str) -> None:
    """Refuse an unknown kind, a parameter the kind does not take or of the wrong type, or a missing
    one, before any compute."""
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in CHECK_KINDS:
        raise ConfigError(f"{where}.kind", kind, f"one of {sorted(CHECK_KINDS)}")
    record = CHECK_KINDS[kind]
    signature = inspect.signature(record.fn)
    taken = [p for p in signature.parameters if p not in _FILLED_IN]
    general = ["tolerance_se"] if record.study else ["observable", "tolerance_se"]
    if record.study and "observable" in spec:
        raise ConfigError(f"{where}.observable", spec["observable"], f"a parameter of {kind}: {taken + general} "
                          "(a convergence study's observable is its plan.observable)")
    for name in parameters(spec):
        if name not in taken:
            raise ConfigError(f"{where}.{name}", spec[name], f"a parameter of {kind}: {taken + general}")
        annotation = signature.parameters[name].annotation
        if not _typed(spec[name], annotation):
            raise ConfigError(f"{where}.{name}", spec[name], f"{_TYPES[annotation]} ({kind}.{name})")
    # Parameters that name one of a few things, then parameters of a given shape: refused at load.
    for name, allowed in record.choices.items():
        if name in spec and spec[name] not in allowed:
            raise ConfigError(f"{where}.{name}", spec[name], f"one of {sorted(allowed)} ({kind}.{name})")
    for name, (fits, allowed) in record.shapes.items():
        if name in spec and not fits(spec[name]):
            raise ConfigError(f"{where}.{name}", spec[name], f"{allowed} ({kind}.{name})")
    low, high = spec.get("min"), spec.get("max")
    if all(is_number(v) for v in (low, high)) and low > high:
        raise ConfigError(f"{where}.max", high, f"a number >= min = {low:g}: the band [min, max] holds no value")
    tolerance = spec.get("tolerance_se", 0)
    if not (is_number(tolerance) and tolerance >= 0):
        raise ConfigError(f"{where}.tolerance_se", tolerance, "a number >= 0")
    if not isinstance(spec.get("by_construction", False), bool):
        raise ConfigError(f"{where}.by_construction", spec["by_construction"],
                          "true (the check holds by how the run is set up: judged, but counted apart) or false")
    for name, p in signature.parameters.items():
        if name not in _FILLED_IN and p.default is inspect.Parameter.empty and name not in spec:
            raise ConfigError(f"{where}.{name}", None, f"a value ({kind} needs {name})")


def evaluate(spec: Mapping, run: str, data: RunData | Series | StudyData,
             runs: Mapping[str, RunData | Series] | None = None) -> CheckResult:
    """Verdict of one check on one run (its ``RunData``, or just its curve; a convergence study's
    ``StudyData`` or ``ConvergenceResult`` for the study kinds); ``runs`` resolves a check's ``other``
    run by id."""
    record = CHECK_KINDS[spec["kind"]]
    fn, study = record.fn, record.study
    params = parameters(spec)
    if study != (isinstance(data, StudyData) or hasattr(data, "order_ci")):
        raise ConfigError("checks.kind", spec["kind"], kind_mismatch(run, not study))
    if study:
        m = fn(data.result if isinstance(data, StudyData) else data, **params)
    else:
        data = as_run_data(data)
        observable = spec.get("observable")
        if "other" in params:    # the other run's curve, or all of it for a kind that looks at more (an orbit)
            other = as_run_data(runs[params["other"]])
            wants_run = "RunData" in str(inspect.signature(fn).parameters["other"].annotation)
            params["other"] = other if wants_run else other.curve(observable)
        if "data" in inspect.signature(fn).parameters:
            params["data"] = data
        m = fn(data.curve(observable), **params)
    quantity, detail = record.quantity if m.quantity is None else m.quantity, m.skipped or m.detail
    if not study:
        name = spec.get("observable") or data.default or "x"
        quantity, detail = quantity.replace(OBSERVABLE, name), detail.replace(OBSERVABLE, name)
    if m.skipped:
        verdict, margin = SKIP, None
    else:
        # Kinds whose value is already in SE units (z-scores) report no se and no margin.
        margin = m.band.margin(m.value) / m.se if m.se and math.isfinite(m.value) else None
        tolerance = spec.get("tolerance_se", 0)
        inside = m.band.contains(m.value) or (tolerance > 0 and margin is not None and margin >= -tolerance)
        verdict = PASS if inside else FAIL
    return CheckResult(id=spec["id"], kind=spec["kind"], run=run, criterion=spec.get("criterion", ""),
                       verdict=verdict, value=float(m.value), se=None if m.se is None else float(m.se),
                       t=m.t, band=str(m.band), margin_se=margin, detail=detail, digits=m.band.digits(),
                       quantity=quantity,
                       unit=record.unit if m.unit is None else m.unit,
                       by_construction=spec.get("by_construction", False))
