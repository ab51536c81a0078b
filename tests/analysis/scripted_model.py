"""A LanguageModel that answers JSON requests from a list and records what it was asked: for testing what a
language-model stage does with answers, never for figures (the slow tests and benchmarks use the real model)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from callscope.analysis.result import ModelUsed


@dataclass(frozen=True)
class Judgement:
    """One yes_probabilities request: the prompt's shared start and the questions asked after it."""

    head: str
    questions: tuple[str, ...]


class ScriptedModel:
    """Answers each JSON request from `answers` in order; a claim judge's request (entailment.py) from `verdicts` in
    order, each the claims' answers ("yes"/"no" strings: probability 1 or 0), and "yes" to every claim when none is
    left: a test of what a stage does with a brief need not script its judgement."""

    def __init__(self, *answers: dict, context_tokens: int = 8192, verdicts: list[list[str]] | None = None):
        self.info = ModelUsed(stage="language-model", name="scripted", version="0")
        self.context_tokens = context_tokens
        self.answers = list(answers)
        self.verdicts = list(verdicts or [])
        self.prompts: list[str] = []
        self.schemas: list[dict] = []
        self.judgements: list[Judgement] = []

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        self.prompts.append(prompt)
        self.schemas.append(schema)
        return self.answers.pop(0)

    def yes_probabilities(self, head: str, questions: Sequence[str]) -> list[float]:
        self.judgements.append(Judgement(head, tuple(questions)))
        said = self.verdicts.pop(0) if self.verdicts else ["yes"] * len(questions)
        assert len(said) == len(questions), f"{len(questions)} claims judged, {len(said)} verdicts scripted"
        return [1.0 if answer == "yes" else 0.0 for answer in said]

    @property
    def asked(self) -> list[str]:
        """The prompts of the JSON requests (a brief, fields, goals), in order."""
        return self.prompts

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        raise AssertionError("the stages ask for JSON")


def briefs(*answers: list[str], context_tokens: int = 8192, verdicts: list[list[str]] | None = None) -> ScriptedModel:
    """A model whose answers to the summary's requests are these briefs, in order: each the sentences of its slots
    (analysis/stages/summary.py reads the slots' values in order, whatever their names); its claim judge's answers
    `verdicts` (ScriptedModel)."""
    return ScriptedModel(*({f"slot_{i}": text for i, text in enumerate(slots)} for slots in answers),
                         context_tokens=context_tokens, verdicts=verdicts)
