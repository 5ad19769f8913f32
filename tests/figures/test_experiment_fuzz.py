"""No experiment file ends in a traceback: the repository's experiment files with one key or value changed at any
depth (a value replaced by a random one or by another of the file's, a key dropped, renamed or added), or their
text cut, doubled or garbled, either load or are refused with one ``ConfigError`` line naming the file (loading
only: nothing is composed or computed). Hypothesis draws the cases deterministically (``derandomize``), so CI is
repeatable."""
import copy
import functools
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgi_run.core.errors import ConfigError
from sgi_run.figures.experiment import load

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FILES = sorted(EXPERIMENTS.glob("*/*.yaml"))
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)    # libyaml's where PyYAML has it: 6 times faster


@functools.cache
def data_of(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@functools.cache
def places_of(path: Path) -> list[tuple[tuple, object]]:
    return places(data_of(path))


@functools.cache
def values_in(path: Path) -> list:
    return values_of(data_of(path))


def places(node, where=()) -> list[tuple[tuple, object]]:
    """(the keys that lead to a mapping or list, a key or index in it) for every value of ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    found = []
    for key, child in items:
        found += [(where, key), *places(child, (*where, key))]
    return found


def values_of(node) -> list:
    return [node] + [v for child in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else ())
                     for v in values_of(child)]


scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, 1, 2, 10**30, 2**63, 0.0, -1.5, 1e-320, 1e308, 0.5]),
    st.sampled_from([math.nan, math.inf, -math.inf]), st.integers(min_value=-10**6, max_value=10**6),
    st.sampled_from(["", " ", "abc", "ü∂", "nope", "C9", "log", "mean", "H", "by_position", "a\nb", "x=1"]),
    st.text(max_size=6))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.lists(st.lists(scalars, max_size=2), max_size=2),
                   st.dictionaries(st.sampled_from(["a", "runs", "paths", "min", "max"]), scalars, max_size=2))
new_keys = st.one_of(st.sampled_from(["foo", "runz", "yscal", "cost", "invariant", "observable", "min", "max"]),
                     st.text(max_size=4), st.integers(0, 3), st.none())


@st.composite
def changed_files(draw) -> tuple[str, bytes]:
    """(a file name, its text): one of the repository's files with one key or value changed."""
    path = draw(st.sampled_from(FILES))
    data = copy.deepcopy(data_of(path))
    where, key = draw(st.sampled_from(places_of(path)))
    parent = data
    for step in where:
        parent = parent[step]
    change = draw(st.sampled_from(["replace", "swap", "drop", "rename", "add"]))
    if change == "replace":
        parent[key] = draw(values)
    elif change == "swap":         # another value of the same file: a run id, a list of overrides, a panel ...
        parent[key] = copy.deepcopy(draw(st.sampled_from(values_in(path))))
    elif change == "drop":
        del parent[key]
    elif isinstance(parent, dict):
        value = parent.pop(key) if change == "rename" else draw(values)
        parent[draw(new_keys)] = value
    else:
        parent.append(draw(values))
    return path.name, yaml.dump(data, Dumper=DUMPER, allow_unicode=True).encode()


@st.composite
def garbled_files(draw) -> tuple[str, bytes]:
    """(a file name, its bytes): one of the repository's files with a piece cut, doubled or replaced by junk."""
    path = draw(st.sampled_from(FILES))
    text = path.read_bytes()
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 200)))
    junk = draw(st.sampled_from([b"", b"\xff\xfe", b"&a [*a]", b"*b", b": :", b"\t", b"{", b"- ", b"\n  x: 1\n"]))
    return path.name, text[:start] + draw(st.sampled_from([junk, text[start:end] * 2])) + text[end:]


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzzed")


def loads_or_is_refused_in_one_line(directory: Path, name: str, content: bytes) -> None:
    path = directory / name
    path.write_bytes(content)
    try:
        load(path)
    except ConfigError as err:
        text = str(err)
        assert "\n" not in text and " is not allowed: " in text, text
        assert err.key.startswith(f"{name}:") or err.key == str(path), text
    # anything else propagates: the test fails with its traceback


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(file=changed_files())
def test_an_experiment_file_with_a_key_or_value_changed_loads_or_is_refused_in_one_line(directory, file):
    loads_or_is_refused_in_one_line(directory, *file)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(file=garbled_files())
def test_a_garbled_experiment_file_loads_or_is_refused_in_one_line(directory, file):
    loads_or_is_refused_in_one_line(directory, *file)
