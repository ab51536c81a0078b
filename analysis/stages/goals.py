"""Goals, decided from evidence found in the transcript and shown with the verdict.

`evaluate_goals` decides each goal of the project (callscope.resources.kinds.Goal) from the segments and the
speakers' roles: met when a sentence says one of its phrases or is close enough in meaning to its description (or to
example utterances of the act it names: goal_examples.py), said by the right speaker in its time window, and giving
a name where the goal asks for one (`needs_name`: "greet the caller and give your name" is not met by "Hello."); a score
in 0..1, at least 0.5 exactly when met; an explanation quoting the evidence with its time. The language model
phrases explanations (`phrase_with_model`) or decides verdicts (`judge_with_model`) only where asked, and only
what the transcript supports is kept. The rules: docs/analysis.md; the thresholds' figures: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import structlog

from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import Evidence, GoalResult, Pause, TranscriptSegment
from callscope.analysis.stages.evidence import (
    QUOTE_MAX_CHARS,
    Similarities,
    clock,
    excerpt,
    find_words,
    query_text,
    quote_in_transcript,
    quote_locations,
    quoted_strings,
    similarity_score,
    threshold_of,
    tokens,
    word_time,
)
from callscope.analysis.stages.faithfulness import SupportChecker
from callscope.analysis.stages.goal_examples import Act, acts_named, examples, says_own_name
from callscope.analysis.stages.redaction import EntityType, find_spans
from callscope.analysis.stages.summary import transcript_budget, transcript_prompt

if TYPE_CHECKING:
    from callscope.resources.kinds import Goal

log = structlog.get_logger()

SIMILARITY_THRESHOLD = 0.45
# Similarity to an example utterance of the act a goal names (goal_examples.py) from which a sentence is that act,
# and where its score reaches 1; a goal's min_similarity moves this bar by as much as it moves SIMILARITY_THRESHOLD.
EXAMPLE_THRESHOLD = 0.60
EXAMPLE_FLOOR, EXAMPLE_CEILING = 0.20, 0.90
MAX_EVIDENCE = 5
EXPLANATION_MAX_CHARS = 600
EXPLANATION_MAX_TOKENS = 120  # one or two sentences; a cap on the answer is a cap on the time

# An explanation that states the other verdict than the one decided is not used.
_SAYS_MET = re.compile(r"\b(?:was|is|has been|were|been) (?:clearly |fully |successfully )?(?:met|achieved)\b", re.I)
_SAYS_NOT_MET = re.compile(r"\b(?:not|never|n't) (?:been )?(?:met|achieved)\b", re.I)


# --- goals ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A candidate piece of evidence and whether the goal's rules let it count."""

    evidence: Evidence
    segment: TranscriptSegment
    phrase: str | None  # the phrase it contains, for a phrase match
    similarity: float | None  # its similarity to the goal (or to `example`), for a match by meaning
    strength: float  # 1.0 for a phrase, the mapped similarity otherwise
    matches: bool  # a phrase match, or a similarity at or above the threshold
    rejected: str | None  # why the speaker, time or name rule does not let it count; None when it counts
    example: tuple[Act, str] | None = None  # the example utterance of an act it is close to, when that decided
    gives_name: bool = False  # the name a goal that asks for one was given in, shown beside what met it


def role_of(speaker: str, roles: Mapping[str, str]) -> str:
    return roles.get(speaker, "unknown")


def who(speaker: str, roles: Mapping[str, str]) -> str:
    role = role_of(speaker, roles)
    return f"the {role}" if role in ("agent", "customer") else speaker


def rule_problem(goal: Goal, segment: TranscriptSegment, start_ms: int, roles: Mapping[str, str]) -> str | None:
    """Why the goal's speaker or time rule rejects words of segment said at start_ms; None when they count."""
    if goal.speaker != "any" and role_of(segment.speaker, roles) != goal.speaker:
        return f"said by {who(segment.speaker, roles)}, not the {goal.speaker}"
    if goal.within_seconds is not None and start_ms > goal.within_seconds * 1000:
        return f"after the first {goal.within_seconds} s"
    return None



NO_NAME = "said without a name, which the goal asks for"


def needs_name(goal: Goal) -> bool:
    """Whether the goal asks the speaker to give a name (it names an introduction: "give your name", "introduces
    themselves"), with phrases or without: its phrases say how it is said, not that a name may be left out."""
    return any(act.gives_name for act in acts_named(goal.name, goal.description))


def named_segments(segments: Sequence[TranscriptSegment]) -> frozenset[int]:
    """The ids of the segments that give a person's name: as the redaction's name rules find one ("my name is Anna",
    "this is Peter speaking", "it's Sam from the service desk"), a name redacted already, or another language's
    cue (goal_examples.says_own_name: "Mein Name ist Anna")."""
    found = {segments[span.segment].id for span in find_spans(segments, [EntityType.PERSON_NAME])
             if span.entity == EntityType.PERSON_NAME}
    found |= {s.id for s in segments if says_own_name(s.text)
              or any(w.entity == EntityType.PERSON_NAME for w in s.words)}
    return frozenset(found)


def name_given(goal: Goal, segments: Sequence[TranscriptSegment], roles: Mapping[str, str],
               named: frozenset[int]) -> Finding | None:
    """The first segment in which the goal's speaker gives a name within its time window, as evidence; None: no name
    was given as the goal asks (a greeting in one turn and the name in the next meet it together)."""
    for s in segments:
        if s.id in named and rule_problem(goal, s, s.start_ms, roles) is None:
            quote, _ = excerpt(s, 0, len(tokens(s.text)))
            return Finding(Evidence(dialogue_id=s.id, start_ms=s.start_ms, quote=quote), s, None, None, 1.0, False,
                           None, gives_name=True)
    return None


def phrase_findings(goal: Goal, segments: Sequence[TranscriptSegment], roles: Mapping[str, str]) -> list[Finding]:
    """Every occurrence of every phrase of the goal."""
    findings = []
    for phrase in goal.phrases:
        wanted = tokens(phrase)
        for segment in segments:
            words = tokens(segment.text)
            at = find_words(words, wanted)
            while at >= 0:
                quote, _ = excerpt(segment, at, len(wanted))
                start = word_time(segment, at)
                findings.append(Finding(Evidence(dialogue_id=segment.id, start_ms=start, quote=quote), segment,
                                        phrase, None, 1.0, True, rule_problem(goal, segment, start, roles)))
                at = find_words(words, wanted, at + 1)
    return findings


def acts_of(goal: Goal) -> list[tuple[Act, str]]:
    """(act, example) of the acts the goal names; none for a goal with phrases: its phrases say how it is said, and
    an act's examples would meet it with what it does not ask for (benchmarks/accuracy.py: "Hello, this is Acme."
    met "The agent thanks the caller for calling and gives their name" as a greeting; goal verdicts 100 % -> 58 %)."""
    return [] if goal.phrases else examples(goal.name, goal.description)


def queries(goal: Goal) -> list[str]:
    """The texts a goal is matched against by meaning: its own text and the examples of the acts it names."""
    if threshold_of(goal.min_similarity, SIMILARITY_THRESHOLD) is None:
        return []
    return [query_text(goal.name, goal.description)] + [text for _, text in acts_of(goal)]


def _closest(unit_text: str, similarity: float, threshold: float,
             by_example: list[tuple[Act, str, float]]) -> tuple[float, float, bool, tuple[Act, str] | None]:
    """(similarity, strength, matches, example) of a unit: to the goal's text, or to an example of an act the goal
    names when that scores higher (the example's own bar; an act's required words must be in the unit)."""
    best = (similarity, similarity_score(similarity, threshold), similarity >= threshold, None)
    bar = EXAMPLE_THRESHOLD + threshold - SIMILARITY_THRESHOLD
    for act, text, value in by_example:
        if act.requires is not None and not act.requires.search(unit_text):
            continue
        strength = similarity_score(value, bar, EXAMPLE_FLOOR, EXAMPLE_CEILING)
        if strength > best[1]:
            best = (value, strength, value >= bar, (act, text))
    return best


def meaning_findings(goal: Goal, roles: Mapping[str, str], similarities: Similarities) -> list[Finding]:
    """Each unit that matches by meaning, and each unit the rules let count (for the score when none matches)."""
    threshold = threshold_of(goal.min_similarity, SIMILARITY_THRESHOLD)
    if threshold is None or similarities.embedder is None:
        return []
    acts = acts_of(goal)
    example_rows = [similarities(text) for _, text in acts]
    findings = []
    for i, (unit, similarity) in enumerate(zip(similarities.units,
                                               similarities(query_text(goal.name, goal.description)), strict=True)):
        by_example = [(act, text, float(row[i])) for (act, text), row in zip(acts, example_rows, strict=True)]
        value, strength, matches, example = _closest(unit.text, float(similarity), threshold, by_example)
        start = word_time(unit.segment, unit.first)
        problem = rule_problem(goal, unit.segment, start, roles)
        if matches or problem is None:
            quote, _ = excerpt(unit.segment, unit.first, len(tokens(unit.text)))
            findings.append(Finding(Evidence(dialogue_id=unit.segment.id, start_ms=start, quote=quote), unit.segment,
                                    None, value, strength, matches, problem, example))
    return findings


def decide(findings: Sequence[Finding]) -> tuple[bool, float, list[Finding]]:
    """met, score and the evidence shown (the strongest MAX_EVIDENCE that count, in time order)."""
    counted = [f for f in findings if f.rejected is None]
    best: dict[int, Finding] = {}  # the strongest finding of each segment
    for f in sorted((f for f in counted if f.matches), key=lambda f: -f.strength):
        best.setdefault(f.evidence.dialogue_id, f)
    chosen = sorted(best.values(), key=lambda f: -f.strength)[:MAX_EVIDENCE]
    chosen.sort(key=lambda f: (f.evidence.start_ms, f.evidence.dialogue_id))
    score = max((f.strength for f in counted), default=0.0)
    met = bool(chosen)
    return met, (max(0.5, score) if met else min(0.49, score)), chosen


def _said(f: Finding, roles: Mapping[str, str]) -> str:
    return f'at {clock(f.evidence.start_ms)} {who(f.segment.speaker, roles)} said "{f.evidence.quote}"'


def _how(f: Finding) -> str:
    if f.gives_name:
        return " (a name)"
    if f.phrase is not None:
        return f' (phrase "{f.phrase}")'
    if f.example is not None:
        act, text = f.example
        return f' (similarity {f.similarity:.2f} to the example "{text}" of {act.name})'
    if f.similarity is not None:
        return f" (similarity {f.similarity:.2f} to the goal)"
    return ""


def met_explanation(chosen: Sequence[Finding], roles: Mapping[str, str]) -> str:
    parts = [_said(f, roles) + _how(f) for f in chosen[:2]]
    more = f"; and {len(chosen) - 2} more" if len(chosen) > 2 else ""
    return _cap("Met: " + "; ".join(parts) + more + ".")


def not_met_explanation(goal: Goal, findings: Sequence[Finding], roles: Mapping[str, str],
                        has_speech: bool = True, by_meaning: bool = True) -> str:
    if not has_speech:
        return "Not met: the call has no speech."
    rules = ([f"by the {goal.speaker}"] if goal.speaker != "any" else []) + (
        [f"within the first {goal.within_seconds} s"] if goal.within_seconds is not None else [])
    scope = "".join(f" {r}" for r in rules)
    meaning = by_meaning and threshold_of(goal.min_similarity, SIMILARITY_THRESHOLD) is not None
    wanted = " or ".join(f'"{p}"' for p in goal.phrases)
    what = [f"says {wanted}"] if wanted else []
    acts = " or ".join(dict.fromkeys(act.name for act, _ in acts_of(goal)))
    what += ["is close in meaning to the goal" + (f" or to an example of {acts}" if acts else "")] if meaning else []
    if not what:
        return "Not met: nothing can show it: the goal has no phrases and no text model matched it by meaning."
    text = f"Not met: no sentence{scope} " + " or ".join(what) + (" and gives a name" if needs_name(goal) else "")
    near = [f for f in findings if f.rejected is not None and f.matches]
    closest = max((f for f in findings if f.rejected is None and f.similarity is not None),
                  key=lambda f: f.strength, default=None)
    if near:
        f = max(near, key=lambda f: f.strength)
        text += f"; {_said(f, roles)}, but it was {f.rejected}"
    elif closest is not None:
        text += f' (closest: at {clock(closest.evidence.start_ms)} "{closest.evidence.quote}", ' \
                f"similarity {closest.similarity:.2f})"
    return _cap(text + ".")


def deterministic_explanation(goal: Goal, met: bool, chosen: Sequence[Finding], findings: Sequence[Finding],
                              roles: Mapping[str, str], has_speech: bool = True, by_meaning: bool = True) -> str:
    """The explanation built from the evidence itself, with timestamps."""
    if met:
        return met_explanation(chosen, roles)
    return not_met_explanation(goal, findings, roles, has_speech, by_meaning)


def _cap(text: str) -> str:
    return text if len(text) <= EXPLANATION_MAX_CHARS else text[:EXPLANATION_MAX_CHARS - 1].rstrip() + "…"


# --- the language model: phrasing (small model) or judging (large model) ----------------------------


EXPLANATION_SCHEMA = {
    "type": "object",
    "properties": {
        # about 75 tokens: with the quote ids, within EXPLANATION_MAX_TOKENS
        "explanation": {"type": "string", "minLength": 1, "maxLength": 300},
        "quote_ids": {"type": "array", "items": {"type": "integer"}, "maxItems": MAX_EVIDENCE},
    },
    "required": ["explanation", "quote_ids"],
    "additionalProperties": False,
}

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "met": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "explanation": {"type": "string", "minLength": 1, "maxLength": 400},
        "quotes": {"type": "array", "items": {"type": "string", "maxLength": QUOTE_MAX_CHARS}, "maxItems": 3},
    },
    "required": ["met", "score", "explanation", "quotes"],
    "additionalProperties": False,
}


def _transcript_prefix(segments: Sequence[TranscriptSegment], llm: Any, roles: Mapping[str, str]) -> str:
    # The prefix every stage that asks the model shares (summary.py), so llama.cpp evaluates it once.
    return transcript_prompt(segments, transcript_budget(llm), roles)


def _goal_line(goal: Goal) -> str:
    rules = []
    if goal.phrases:
        rules.append("one of these is said: " + ", ".join(f'"{p}"' for p in goal.phrases))
    if goal.speaker != "any":
        rules.append(f"it must be said by the {goal.speaker}")
    if goal.within_seconds is not None:
        rules.append(f"only the first {goal.within_seconds} seconds count")
    return f"Goal \"{goal.name}\": {goal.description}" + (f" ({'; '.join(rules)})" if rules else "") + "\n"


def verified_explanation(answer: Mapping[str, Any], chosen: Sequence[Finding], segments: Sequence[TranscriptSegment],
                         met: bool, embedder: Any | None = None) -> str | None:
    """The model's explanation when it can be trusted, else None: every string it puts in quotes is in the
    transcript word for word, its quote ids exist, a met verdict cites at least one quote, it does not state the
    other verdict, and each of its sentences is supported by the evidence it was given (faithfulness.py: the
    names and numbers in it are said there and, with an embedder, its meaning is close to one of the quotes)."""
    text = " ".join(str(answer.get("explanation", "")).split())
    ids = answer.get("quote_ids", [])
    if not text or not isinstance(ids, list) or any(not isinstance(i, int) or not 1 <= i <= len(chosen) for i in ids):
        return None
    if met and chosen and not ids:
        return None
    if any(quote_in_transcript(q, segments) is None for q in quoted_strings(text)):
        return None
    if (_SAYS_NOT_MET if met else _SAYS_MET).search(text):
        return None  # it contradicts the verdict
    text = re.sub(r"(?i)^(not )?met\b[:.,]?\s*", "", text)  # the verdict is ours: the model may not restate it
    _, unsupported = SupportChecker([f.segment for f in chosen] or segments, embedder).supported_text(text)
    if unsupported:
        return None  # it says what the evidence does not
    return _cap(f"{'Met' if met else 'Not met'}: {text}")


def _judge(goal: Goal, segments: Sequence[TranscriptSegment], roles: Mapping[str, str], llm: Any,
           prefix: str, nameless: bool = False) -> GoalResult | None:
    """The model's own verdict; None when unusable: "met" without a quote that is in the transcript and passes
    the goal's speaker and time rules, or "met" where the goal asks for a name and none was given (`nameless`)."""
    prompt = prefix + _goal_line(goal) + (
        "Decide whether the call met the goal. score is your confidence that it was met, 0 to 1. "
        "In quotes, copy the transcript words that show it, word for word (at most 3). "
        "Explain the verdict in one or two sentences.")
    answer = llm.generate_json(prompt, JUDGE_SCHEMA, max_tokens=400)
    shown: list[Finding] = []
    for quote in answer.get("quotes", []):
        # the first place the quote is said that the goal's rules let count
        passing = [(s, at) for s, at in quote_locations(quote, segments)
                   if rule_problem(goal, s, word_time(s, at), roles) is None]
        if passing:
            segment, at = passing[0]
            verbatim, _ = excerpt(segment, at, len(tokens(quote)))
            shown.append(Finding(Evidence(dialogue_id=segment.id, start_ms=word_time(segment, at), quote=verbatim),
                                 segment, None, None, 1.0, True, None))
    met = bool(answer.get("met"))
    if met and (not shown or nameless):
        return None
    score = float(answer.get("score", 0.5))
    text = " ".join(str(answer.get("explanation", "")).split())
    if text and all(quote_in_transcript(q, segments) is not None for q in quoted_strings(text)):
        explanation = _cap(f"{'Met' if met else 'Not met'}: " + re.sub(r"(?i)^(not )?met\b[:.,]?\s*", "", text))
    elif met:
        explanation = met_explanation(shown, roles)
    else:
        explanation = "Not met: the language model found no sentence that shows the goal."
    return GoalResult(goal_id=goal.id, goal_name=goal.name, met=met,
                       score=round(max(0.5, score) if met else min(0.49, score), 3), explanation=explanation,
                       evidence=[f.evidence for f in shown])


@dataclass(frozen=True)
class _Decided:
    """A goal decided from its evidence, before its explanation is phrased."""

    goal: Goal
    result: GoalResult
    chosen: list[Finding]
    phrase: bool  # met from evidence: the model may phrase its explanation


def absent_situation(goal: Goal, segments: Sequence[TranscriptSegment], pauses: Sequence[Pause]) -> str | None:
    """Why the goal does not apply to the call: its situation (`applies_when`) did not occur; None when it did, or
    when the goal applies to every call."""
    when = goal.applies_when
    if when is None:
        return None
    if when.long_pause and any(p.long for p in pauses):
        return None
    said = [tokens(s.text) for s in segments]
    if any(find_words(words, tokens(phrase)) >= 0 for phrase in when.phrases for words in said):
        return None
    looked_for = (["no long pause"] if when.long_pause else []) + (
        ["none of " + ", ".join(f'"{p}"' for p in when.phrases) + " said"] if when.phrases else [])
    return "Not applicable: the situation this goal is about did not occur (" + " and ".join(looked_for) + ")."


def evaluate_goal(goal: Goal, segments: Sequence[TranscriptSegment], roles: Mapping[str, str],
                  similarities: Similarities, llm: Any | None = None, *, judge_with_model: bool = False,
                  prefix: Callable[[], str] | None = None, pauses: Sequence[Pause] = (),
                  named: frozenset[int] | None = None) -> _Decided:
    """One goal's verdict with its deterministic explanation (see the module docstring); with judge_with_model
    the model's verdict when usable. A goal whose situation did not occur is not applicable, whatever was said.
    `named`: the segments that give a name (`named_segments`), where the caller found them already."""
    if (absent := absent_situation(goal, segments, pauses)) is not None:
        return _Decided(goal, GoalResult(goal_id=goal.id, goal_name=goal.name, met=False, score=0.0,
                                         explanation=absent, applicable=False), [], False)
    has_speech = any(tokens(s.text) for s in segments)
    findings = phrase_findings(goal, segments, roles) + meaning_findings(goal, roles, similarities)
    name = None
    nameless = False
    if needs_name(goal):
        name = name_given(goal, segments, roles, named_segments(segments) if named is None else named)
        nameless = name is None
        if nameless:
            findings = [replace(f, rejected=NO_NAME) if f.rejected is None else f for f in findings]
    met, score, chosen = decide(findings)
    if met and name is not None and all(f.segment.id != name.segment.id for f in chosen):
        chosen = sorted([*chosen[:MAX_EVIDENCE - 1], name], key=lambda f: (f.evidence.start_ms, f.evidence.dialogue_id))
    explanation = deterministic_explanation(goal, met, chosen, findings, roles, has_speech,
                                            by_meaning=similarities.embedder is not None)
    result = GoalResult(goal_id=goal.id, goal_name=goal.name, met=met, score=score, explanation=explanation,
                        evidence=[f.evidence for f in chosen])
    if llm is not None and has_speech and judge_with_model:
        try:
            judged = _judge(goal, segments, roles, llm,
                            prefix() if prefix else _transcript_prefix(segments, llm, roles), nameless)
        except LanguageModelError as exc:
            log.warning("goal_judge_failed", goal_id=goal.id, error=str(exc), decided_by="evidence")
            judged = None
        if judged is not None:
            return _Decided(goal, judged, [], False)
        log.warning("goal_verdict_unusable", goal_id=goal.id, decided_by="evidence")
    # A goal not met has no evidence to phrase: its deterministic text says what was looked for and the closest
    # sentence (a model asked to explain an absence wrote claims about the call: "no greeting").
    return _Decided(goal, result, chosen, met and has_speech)


def explanations_schema(decided: Sequence[_Decided]) -> dict:
    """One explanation per goal to phrase, keyed goal_<id> (the grammar keeps each in its own place)."""
    return {"type": "object", "properties": {f"goal_{d.goal.id}": EXPLANATION_SCHEMA for d in decided},
            "required": [f"goal_{d.goal.id}" for d in decided], "additionalProperties": False}


def explanations_prompt(decided: Sequence[_Decided], roles: Mapping[str, str], prefix: str) -> str:
    """The request to phrase the explanations of goals met from evidence, all in one answer."""
    lines = [prefix, "These goals were judged MET from the evidence below each.\n"]
    for d in decided:
        lines.append(f"goal_{d.goal.id}: " + _goal_line(d.goal) + "Evidence (numbered quotes from the transcript):\n")
        lines += [f'[{i}] {who(f.segment.speaker, roles)}: "{f.evidence.quote}"\n' for i, f in enumerate(d.chosen, 1)]
    lines.append("For each goal, explain the verdict to a supervisor in one or two sentences. Quote only from that "
                 "goal's numbered evidence, word for word, in double quotes. Put the numbers of the quotes you used "
                 "in quote_ids.")
    return "".join(lines)


def _phrase(decided: list[_Decided], segments: Sequence[TranscriptSegment], roles: Mapping[str, str], llm: Any,
            prefix: str, embedder: Any | None) -> list[GoalResult]:
    """The results, with the explanations of goals met from evidence phrased by the model where verified."""
    wanted = [d for d in decided if d.phrase]
    answers: Mapping[str, Any] = {}
    if wanted:
        try:
            answers = llm.generate_json(explanations_prompt(wanted, roles, prefix),
                                        explanations_schema(wanted), max_tokens=EXPLANATION_MAX_TOKENS * len(wanted))
        except LanguageModelError as exc:
            log.warning("goal_explanations_failed", error=str(exc), explained_by="evidence")
    results = []
    for d in decided:
        answer = answers.get(f"goal_{d.goal.id}") if d.phrase else None
        phrased = verified_explanation(answer, d.chosen, segments, True, embedder) if answer else None
        if answer and phrased is None:
            log.info("goal_explanation_not_used", goal_id=d.goal.id, reason="it says what the evidence does not")
        results.append(d.result.model_copy(update={"explanation": phrased}) if phrased else d.result)
    return results


def evaluate_goals(goals: Sequence[Goal], segments: Sequence[TranscriptSegment], roles: Mapping[str, str] | None,
                   embedder: Any | None, llm: Any | None = None, *, judge_with_model: bool = False,
                   phrase_with_model: bool = True, pauses: Sequence[Pause] = ()) -> list[GoalResult]:
    """Each goal's verdict, in the order of goals. embedder: anything with `embed(texts) -> (n, dim)` of
    L2-normalised rows (TextEmbedder), or None for rules only; llm: a LanguageModel, or None. With
    phrase_with_model the model phrases the explanations of all goals met from evidence in one request. `pauses`:
    the call's (pauses.py), for the goals about a long pause or hold."""
    roles = dict(roles or {})
    similarities = Similarities(embedder, segments)
    similarities.prepare([text for g in goals for text in queries(g)])
    cached: list[str] = []
    named = named_segments(segments) if any(needs_name(g) for g in goals) else None

    def prefix() -> str:
        if not cached:
            cached.append(_transcript_prefix(segments, llm, roles))
        return cached[0]

    decided = [evaluate_goal(goal, segments, roles, similarities, llm, judge_with_model=judge_with_model,
                             prefix=prefix, pauses=pauses, named=named) for goal in goals]
    if llm is None or not phrase_with_model:
        return [d.result for d in decided]
    return _phrase(decided, segments, roles, llm, prefix(), embedder)


__all__ = ["SIMILARITY_THRESHOLD", "evaluate_goals"]
