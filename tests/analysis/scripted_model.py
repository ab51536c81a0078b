"""A LanguageModel that answers JSON requests from a list and records what it was asked: for testing what a
language-model stage does with answers, never for figures (the slow tests and benchmarks use the real model)."""

from __future__ import annotations

from callscope.analysis.result import ModelUsed


def _is_judgement(schema: dict) -> bool:
    """Whether `schema` asks yes or no of each claim (analysis/stages/entailment.py's judge_schema)."""
    properties = schema.get("properties") or {}
    return bool(properties) and all(p == {"enum": ["yes", "no"]} for p in properties.values())


class ScriptedModel:
    """Answers each request from `answers` in order; a claim judge's request (entailment.py) from `verdicts` in
    order, each the claims' answers ("yes"/"no" strings), and "yes" to every claim when none is left: a test of
    what a stage does with a brief need not script its judgement."""

    def __init__(self, *answers: dict, context_tokens: int = 8192, verdicts: list[list[str]] | None = None):
        self.info = ModelUsed(stage="language-model", name="scripted", version="0")
        self.context_tokens = context_tokens
        self.answers = list(answers)
        self.verdicts = list(verdicts or [])
        self.prompts: list[str] = []
        self.schemas: list[dict] = []

    def generate_json(self, prompt: str, schema: dict, max_tokens: int = 512) -> dict:
        self.prompts.append(prompt)
        self.schemas.append(schema)
        if _is_judgement(schema):
            said = self.verdicts.pop(0) if self.verdicts else ["yes"] * len(schema["properties"])
            return {str(i): answer for i, answer in enumerate(said, 1)}
        return self.answers.pop(0)

    @property
    def asked(self) -> list[str]:
        """The prompts of the requests that were not a claim judge's."""
        return [p for p, s in zip(self.prompts, self.schemas, strict=True) if not _is_judgement(s)]

    @property
    def judgements(self) -> list[str]:
        """The prompts of the claim judge's requests."""
        return [p for p, s in zip(self.prompts, self.schemas, strict=True) if _is_judgement(s)]

    def generate_text(self, prompt: str, max_tokens: int = 256) -> str:
        raise AssertionError("the stages ask for JSON")


def briefs(*answers: list[str], context_tokens: int = 8192, verdicts: list[list[str]] | None = None) -> ScriptedModel:
    """A model whose answers to the summary's requests are these briefs, in order: each the sentences of its slots
    (analysis/stages/summary.py reads the slots' values in order, whatever their names); its claim judge's answers
    `verdicts` (ScriptedModel)."""
    return ScriptedModel(*({f"slot_{i}": text for i, text in enumerate(slots)} for slots in answers),
                         context_tokens=context_tokens, verdicts=verdicts)
