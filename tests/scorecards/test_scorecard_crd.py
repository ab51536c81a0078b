"""The Scorecard CRD says what OpenAPI and standard CEL can of the form (evaluated as the API server does, with
tests/k8s/test_crds.py's helpers): the example passes; an answer source with another source's fields, without its
own, or out of its own bounds, a weight over 100, an unknown question type are refused."""

from __future__ import annotations

import copy

import pytest

from tests.k8s.test_crds import crd_errors, crd_for, example


def with_answer(answer: dict) -> dict:
    obj = copy.deepcopy(example("Scorecard"))
    obj["spec"]["sections"][0]["questions"][0]["answer"] = answer
    return obj


def test_the_example_passes():
    assert crd_errors(crd_for("Scorecard"), example("Scorecard")) == []


@pytest.mark.parametrize("answer, message", [
    ({"source": "goal", "goalId": 1, "name": "billing"}, "the goal source has no name"),
    ({"source": "goal"}, "the goal source needs goalId"),
    ({"source": "talk_share", "max": 5}, "max of the talk_share source must be 0 to 1"),
    ({"source": "interruptions", "role": "any", "max": 2, "prompt": "x"}, "the interruptions source has no"),
    ({"source": "field", "name": "Not A Slug"}, "name of the field source must match"),
    ({"source": "telepathy"}, "source"),
])
def test_an_answer_source_that_breaks_its_shape_is_refused(answer, message):
    errors = crd_errors(crd_for("Scorecard"), with_answer(answer))
    assert any(message in e for e in errors), errors


def test_sizes_and_types_are_refused():
    obj = copy.deepcopy(example("Scorecard"))
    obj["spec"]["sections"][0]["weight"] = 101
    obj["spec"]["sections"][0]["questions"][0]["type"] = "essay"
    errors = crd_errors(crd_for("Scorecard"), obj)
    assert any("101" in e or "maximum" in e for e in errors) and any("essay" in e for e in errors), errors


def test_repeated_names_and_ids_are_refused():
    obj = copy.deepcopy(example("Scorecard"))
    questions = obj["spec"]["sections"][0]["questions"]
    questions[1]["id"] = questions[0]["id"]
    obj["spec"]["sections"][1]["name"] = obj["spec"]["sections"][0]["name"]
    errors = crd_errors(crd_for("Scorecard"), obj)
    assert any("question ids must not repeat in a section" in e for e in errors), errors
    assert any("section names must not repeat" in e for e in errors), errors
