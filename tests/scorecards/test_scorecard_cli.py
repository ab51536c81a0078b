"""`callscope analyze --json` with QA forms beside the project in its --project-config file: the call scored against
each (its JSON's scorecards); a form the file's project cannot answer, or a broken one, refused in one line. The
pipeline is stood in for by one answering a written result: the models' own runs are tests/analysis's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from callscope.cli import main
from tests.scorecards.test_scorecards_resource import FORM_YAML, PROJECT
from tests.search.calls import result

LINES = [("agent", "Thank you for calling, my name is Ana."), ("customer", "I was charged twice on my invoice.")]


class Analysed:
    """A pipeline whose run answers a written result: goal 1 met, goal 2 not, the call about billing."""

    llm = embedder = None

    def __init__(self, settings):
        pass

    def run(self, path, project, progress=None):
        assert project is not None and project.name == "Support"
        return result(LINES, goals={1: True, 2: False}, categories=("billing",))


@pytest.fixture
def analyze(monkeypatch, tmp_path):
    monkeypatch.setattr("callscope.analysis.runtime.pipeline.Pipeline", Analysed)
    audio = tmp_path / "call.wav"
    audio.write_bytes(b"RIFF")

    def run(config: str):
        path = tmp_path / "project.yaml"
        path.write_text(config)
        return CliRunner().invoke(main, ["analyze", str(audio), "--json", "--project-config", str(path)])
    return run


def project_yaml(goals=PROJECT["spec"]["goals"]) -> str:
    return json.dumps({**PROJECT, "spec": {**PROJECT["spec"], "goals": goals}})  # JSON is YAML


def test_a_form_beside_the_project_scores_the_call(analyze):
    run = analyze(project_yaml() + "\n---\n" + FORM_YAML)
    assert run.exit_code == 0, run.output
    [card] = json.loads(run.stdout)["scorecards"]
    assert (card["scorecard_id"], card["name"], card["version"]) == (1, "Support QA", 1)
    assert {a["question_id"]: a["answer"] for a in card["answers"]} == {"greeting": "yes", "billing": "yes",
                                                                       "resolved": "no"}
    assert card["score"] == 40.0 and card["auto_failed"] is True


def test_without_a_form_there_are_no_scorecards(analyze):
    run = analyze(project_yaml())
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["scorecards"] == []


def test_a_form_naming_what_the_project_lacks_is_refused_in_one_line(analyze):
    run = analyze(project_yaml(goals=PROJECT["spec"]["goals"][:1]) + "\n---\n" + FORM_YAML)
    assert run.exit_code == 1 and run.output.strip().count("\n") == 0
    assert "Scorecard support-qa: sections.1.questions.1.answer.goal_id: no goal 2 in project Support" in run.output


def test_a_broken_form_is_refused_with_its_path(analyze):
    run = analyze(project_yaml() + "\n---\n" + FORM_YAML.replace("weight: 40", "weight: 10"))
    assert run.exit_code == 1 and run.output.strip().count("\n") == 0
    assert "the weights of the form's sections must add up to 100" in run.output
