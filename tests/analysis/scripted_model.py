"""A LanguageModel that answers JSON requests from a list and records what it was asked: for testing what a
language-model stage does with answers, never for figures (the slow tests and benchmarks use the real model)."""

from __future__ import annotations

from callscope.analysis.result import ModelUsed


class ScriptedModel:
    def __init__(self, *answers: dict, context_tokens: int = 8192):
        self.info = ModelUsed(stage="language-model", name="scripted", version="0")
        self.context_tokens = context_tokens
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.schemas: list[dict] = []

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        self.prompts.append(prompt)
        self.schemas.append(schema)
        return self.answers.pop(0)

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        raise AssertionError("the stages ask for JSON")


def briefs(*answers: list[str], context_tokens: int = 8192) -> ScriptedModel:
    """A model whose answers to the summary's requests are these briefs, in order: each the sentences of its slots
    (analysis/stages/summary.py reads the slots' values in order, whatever their names)."""
    return ScriptedModel(*({f"slot_{i}": text for i, text in enumerate(slots)} for slots in answers),
                         context_tokens=context_tokens)
