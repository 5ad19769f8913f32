"""The experiment schema's ``disagreements``: where a figure disagrees with its paper. A bad entry is refused in
one line naming the file and key, before any compute (``experiment.load``)."""
import pytest
import yaml

from sgi_run.core.errors import ConfigError
from sgi_run.figures.experiment import load
from tests.figures.test_experiments import EXPERIMENTS

ENTRY = {"claim": "It is very clear that the near-Boltzmann Gibbs preserving CSVIA performs successfully for every "
                  "friction factor tested.",
         "where": "Section 2, Figure 2.2 caption", "checks": ["equilibrium_line"],
         "finding": "the plateau is below the line", "explanation": "unexplained"}


def _with(tmp_path, *entries):
    spec = yaml.safe_load((EXPERIMENTS / "bou_rabee_owhadi" / "fig2_2.yaml").read_text())
    spec["disagreements"] = list(entries)
    path = tmp_path / "fig2_2.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path


def test_a_disagreement_is_kept_as_written(tmp_path):
    exp = load(_with(tmp_path, ENTRY))
    assert exp.disagreements == (ENTRY,)


@pytest.mark.parametrize("entry, key, allowed", [
    (ENTRY | {"why": "x"}, "disagreements[0].why", "a key of a disagreement with the paper"),
    (ENTRY | {"checks": ["no_such_check"]}, "disagreements[0].checks", "a check id of this file"),
    (ENTRY | {"checks": []}, "disagreements[0].checks", "a non-empty list of check ids"),
    (ENTRY | {"claim": "  "}, "disagreements[0].claim", "quoted verbatim"),
    (ENTRY | {"explanation": ""}, "disagreements[0].explanation", '"unexplained"'),
    ({k: v for k, v in ENTRY.items() if k != "finding"}, "disagreements[0].finding", "required"),
])
def test_a_bad_disagreement_is_refused_in_one_line(tmp_path, entry, key, allowed):
    with pytest.raises(ConfigError) as err:
        load(_with(tmp_path, entry))
    message = str(err.value)
    assert message.startswith(f"fig2_2.yaml:{key}=") and allowed in message and "\n" not in message


def test_an_empty_list_of_disagreements_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"^fig2_2.yaml:disagreements="):
        load(_with(tmp_path))
