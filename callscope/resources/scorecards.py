"""A QA scorecard's form (issue 43): sections of weighted questions, each answered automatically from what the
analysis found in a call (a goal, a category, pauses, talk share, interruptions, the longest silence or hold, the
customer's emotion, an extracted field, a question put to the language model) or by a reviewer only.

``ScorecardForm`` is the body of a form, the same in REST (snake_case: ``auto_fail``, ``goal_id``) and in YAML
(camelCase: ``autoFail``, ``goalId``; either is read, as every resource model here reads both). What names the form
and attaches it to projects (``name``, REST's ``project_ids``, YAML's ``spec.projects``) extends it
(``class ScorecardSpec(ScorecardForm)``). analysis/stages/scorecard.py scores a call against it.

The rules a form must follow, each refused with its path (``sections.1.questions.0.weight``):

- at most two levels: a section holds questions and/or sections that hold only questions (``Subsection``);
- the weights of what sits directly in one place add up to 100: the form's sections; a section's questions and
  subsections together; a subsection's questions. A weight of 0 is allowed (an item that is shown, not counted);
- question ids are slugs, unique in the whole form; section names are unique in the whole form (results and trends
  name sections by name);
- a choice question has options (unique values, at least one worth points); a number question has point ranges that
  do not overlap, at least one worth points; neither has the other's;
- a source fits its question's type (a yes/no question from talk share says its ``max`` or ``min``; an ``llm`` or a
  ``goal`` source answers yes/no only, ...);
- a condition (``applies_when``) that names another question names one that exists, and conditions form no cycle;
- sizes stay within the ``*_MAX`` constants below.

References to goals, categories and fields are checked against the attached projects by ``missing_references``
(the form alone cannot know them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from callscope.resources.meta import CamelModel
from callscope.validation import Name, PositiveInt64, text

if TYPE_CHECKING:
    from callscope.resources.kinds import ProjectSpec

# Sizes: a form a supervisor fills in by hand has a few sections of a few questions; these leave room for the largest
# forms of the QA tools (Contact Lens allows 100 questions) and keep a form, its CRD object and its scoring small.
SECTIONS_MAX = 20  # sections of the form
SUBSECTIONS_MAX = 10  # sections inside one section
QUESTIONS_PER_SECTION_MAX = 50
QUESTIONS_MAX = 100  # in the whole form
LLM_QUESTIONS_MAX = 10  # questions put to the language model: its time is the cost of scoring a call
OPTIONS_MAX = 20  # options of a choice question
RANGES_MAX = 20  # point ranges of a number question
POINTS_MAX = 100  # points of an option or range
PROMPT_MAX = 2000  # an llm question's prompt, in characters
CONDITION_ANSWERS_MAX = OPTIONS_MAX + 1
WEIGHT_TOTAL = 100  # what the weights in one place add up to
SECONDS_MAX = 86_400.0  # a bound on a silence or hold, in seconds
COUNT_MAX = 100_000  # a bound on a count of interruptions

QUESTION_ID = r"^[a-z][a-z0-9_-]{0,62}$"  # a slug: what the results, overrides and trends name a question by
FIELD_NAME = r"^[a-z][a-z0-9_]{0,62}$"  # as ExtractedField.name

QuestionType = Literal["yes_no", "choice", "number"]
AutoFail = Literal["none", "section", "form"]
TalkRole = Literal["agent", "customer"]
AnyRole = Literal["agent", "customer", "any"]
# The eight emotion classes of the analysis (analysis/result.py's Emotion; shared code cannot import it,
# tests/scorecards checks that both say the same).
Emotion = Literal["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"]
NEGATIVE_EMOTIONS: list[Emotion] = ["angry", "disgust", "sad", "fearful"]
EmotionPart = Literal["call", "end"]
CategoryVerdict = Literal["found", "absent"]

Weight = Annotated[int, Field(ge=0, le=WEIGHT_TOTAL)]
Points = Annotated[int, Field(ge=0, le=POINTS_MAX)]
Share = Annotated[float, Field(ge=0, le=1)]
Seconds = Annotated[float, Field(ge=0, le=SECONDS_MAX)]
Bound = Annotated[float, Field(ge=-1e15, le=1e15)]  # a number's bound: finite, and exact enough as a float
QuestionId = Annotated[str, Field(pattern=QUESTION_ID)]
FieldName = Annotated[str, Field(pattern=FIELD_NAME)]
if TYPE_CHECKING:  # to mypy, the text they hold
    QuestionText = str
    Prompt = str
else:
    QuestionText = text(2000)
    Prompt = text(PROMPT_MAX)


def _auto_fail(value: Any) -> Any:
    """The issue's REST shape writes ``"auto_fail": false``: false is "none", true "form" (the whole score)."""
    if value is False:
        return "none"
    if value is True:
        return "form"
    return value


# ----- errors with their paths ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One rule a form breaks: where (field names and list indexes, from the model that found it) and what."""

    loc: tuple[str | int, ...]
    kind: str  # pydantic's error type: "repeated", "unusable", "weights"...
    message: str


def _input_loc(data: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """``loc`` spelt as the input spelt it: a field given as ``autoFail`` is reported as ``autoFail``, one given as
    ``auto_fail`` as ``auto_fail`` (pydantic reports its own errors so). Every field's alias is its camelCase name."""
    out: list[str | int] = []
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            out.append(part)
            node = node[part] if isinstance(node, list | tuple) and part < len(node) else None
            continue
        camel = to_camel(part)
        key = camel if isinstance(node, dict) and camel in node else part
        out.append(key)
        node = node.get(key) if isinstance(node, dict) else getattr(node, part, None)
    return tuple(out)


class _Checked(CamelModel):
    """A model whose rules across its fields report each problem at its own path (not at the model's)."""

    def problems(self) -> list[Problem]:
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _check(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        found = model.problems()
        if found:
            raise ValidationError.from_exception_data(cls.__name__, [
                InitErrorDetails(type=PydanticCustomError(p.kind, p.message), loc=_input_loc(data, p.loc),
                                 input=None)
                for p in found])
        return model


# ----- conditions -------------------------------------------------------------------------------------------------

class QuestionCondition(CamelModel):
    """When a question applies: every part given holds (``phrases``: any of them said). A question that does not
    apply is answered n/a and leaves its section's denominator. phrases and longPause read as a goal's appliesWhen
    (kinds.GoalSituation, which this module cannot import: kinds imports it)."""

    phrases: list[Name] = Field(
        default_factory=list, max_length=50, description="Any of these said, by anyone (whole words, case and "
        "punctuation ignored), e.g. \"refund\".")
    long_pause: bool = Field(
        False, description="A pause at least the project's longPauseThresholdSeconds long occurred.")

    category: Name | None = Field(None, description="The call was put in this category (of the attached project).")
    goal_id: PositiveInt64 | None = Field(None, description="This goal of the attached project was met.")
    field: FieldName | None = Field(None, description="A value was extracted for this field.")
    question: QuestionId | None = Field(
        None, description="Another question of the form, whose answer must be one of `answers`.")
    answers: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=lambda: ["yes"], min_length=1, max_length=CONDITION_ANSWERS_MAX,
        description="With `question`: the answers of that question under which this one applies (yes, no, an "
        "option; default yes).")

    @model_validator(mode="after")
    def _says_something(self) -> QuestionCondition:
        if not (self.phrases or self.long_pause or self.category or self.goal_id is not None or self.field
                or self.question):
            raise ValueError("a condition needs at least one of phrases, longPause, category, goalId, field, question")
        return self


# ----- answer sources ---------------------------------------------------------------------------------------------

class GoalAnswer(CamelModel):
    """Yes when the project's goal was met, no when not, n/a when its situation did not occur."""

    source: Literal["goal"]
    goal_id: PositiveInt64 = Field(description="Id of a goal of the attached projects.")


class CategoryAnswer(CamelModel):
    """Yes when the call was put in the category (or, with yesWhen absent, when it was not)."""

    source: Literal["category"]
    name: Name = Field(description="Name of a category of the attached projects.")
    yes_when: CategoryVerdict = Field(
        "found", description="found: yes when the category was found; absent: yes when it was not (a forbidden "
        "phrase, a complaint).")


class PausesAnswer(CamelModel):
    """Yes when every pause of the call complied with the project's pause rules (a long silence was announced as a
    hold and short enough); a number question gets the count of pauses that did not."""

    source: Literal["pauses"]


class TalkShareAnswer(CamelModel):
    """The role's share of the talk time (0 to 1); yes when within max and min. A number question gets the share."""

    source: Literal["talk_share"]
    role: TalkRole = Field("agent", description="Whose share: agent or customer.")
    max: Share | None = Field(None, description="Yes at most this share (0 to 1).")
    min: Share | None = Field(None, description="Yes at least this share (0 to 1).")


class InterruptionsAnswer(CamelModel):
    """The times the role talked over the other; yes when at most max. A number question gets the count."""

    source: Literal["interruptions"]
    role: AnyRole = Field("agent", description="Whose interruptions: agent, customer or any.")
    max: Annotated[int, Field(ge=0, le=COUNT_MAX)] | None = Field(None, description="Yes at most this many.")


class LongestSilenceAnswer(CamelModel):
    """The longest pause of the call in seconds; yes when at most maxSeconds. A number question gets the seconds."""

    source: Literal["longest_silence"]
    max_seconds: Seconds | None = Field(None, description="Yes when no pause is longer.")


class HoldAnswer(CamelModel):
    """The longest hold (a pause after a hold phrase such as "please hold") in seconds; yes when at most maxSeconds,
    n/a when the call had no hold. A number question gets the seconds."""

    source: Literal["hold"]
    max_seconds: Seconds | None = Field(None, description="Yes when no hold is longer.")


class EmotionAnswer(CamelModel):
    """The share of the role's speech (0 to 1, by time) that sounds like the emotions listed, over the whole call or
    its end (the role's last three turns); yes when within max and min. A number question gets the share, a choice
    question the role's prevailing emotion (an option per emotion)."""

    source: Literal["emotion"]
    role: TalkRole = Field("customer", description="Whose emotion: customer or agent.")
    emotions: list[Emotion] = Field(
        default_factory=lambda: list(NEGATIVE_EMOTIONS), min_length=1, max_length=8,
        description="The emotions measured (default the negative ones: angry, disgust, sad, fearful).")
    part: EmotionPart = Field("call", description="call: all the role's speech; end: its last three turns.")
    max: Share | None = Field(None, description="Yes at most this share (0 to 1).")
    min: Share | None = Field(None, description="Yes at least this share (0 to 1).")


class FieldAnswer(CamelModel):
    """An extracted field's value. A yes/no question: yes when a value was found (and equals `equals`, or lies in
    min..max), no when it was not found or differs. A choice question: the value is the option; a number question:
    the value."""

    source: Literal["field"]
    name: FieldName = Field(description="Name of an extracted field of the attached projects.")
    equals: Name | None = Field(None, description="Yes when the value is this (case ignored; numbers as numbers, "
                                "booleans as true/false).")
    min: Bound | None = Field(None, description="Yes when the (number) value is at least this.")
    max: Bound | None = Field(None, description="Yes when the (number) value is at most this.")


class LlmAnswer(CamelModel):
    """A yes/no question put to the language model with the transcript: yes, no or n/a, with a sentence of the
    transcript quoted as evidence (an answer whose quote is not in the transcript is n/a). Without a language model
    the answer is n/a."""

    source: Literal["llm"]
    prompt: Prompt = Field(min_length=1, description="The question, as the model is asked it (e.g. \"Did the "
                           "agent promise a refund?\").")


class ManualAnswer(CamelModel):
    """Answered by a reviewer only: unanswered (and not counted) until one does."""

    source: Literal["manual"]


AnswerSource = Annotated[
    GoalAnswer | CategoryAnswer | PausesAnswer | TalkShareAnswer | InterruptionsAnswer | LongestSilenceAnswer
    | HoldAnswer | EmotionAnswer | FieldAnswer | LlmAnswer | ManualAnswer,
    Field(discriminator="source"),
]
SOURCES = ("goal", "category", "pauses", "talk_share", "interruptions", "longest_silence", "hold", "emotion", "field",
           "llm", "manual")

# Which sources can answer which type of question.
SOURCES_BY_TYPE: dict[str, frozenset[str]] = {
    "yes_no": frozenset(SOURCES),
    "choice": frozenset({"emotion", "field", "manual"}),
    "number": frozenset({"pauses", "talk_share", "interruptions", "longest_silence", "hold", "emotion", "field",
                         "manual"}),
}
# A yes/no question from a figure needs a bound to compare it with: (the fields, one of which must be set).
_YES_NO_BOUNDS: dict[str, tuple[str, ...]] = {
    "talk_share": ("max", "min"), "interruptions": ("max",), "longest_silence": ("max_seconds",),
    "hold": ("max_seconds",), "emotion": ("max", "min"),
}


# ----- questions and sections -------------------------------------------------------------------------------------

class ChoiceOption(CamelModel):
    value: Name = Field(description="The option, as answers and overrides name it.")
    points: Points = Field(description="Points the option earns (0 to 100); the best option's are the question's.")


class PointRange(CamelModel):
    min: Bound | None = Field(None, description="Lowest number of the range (included); unset: no lower end.")
    max: Bound | None = Field(None, description="Highest number of the range (included); unset: no upper end.")
    points: Points = Field(description="Points a number in the range earns (0 to 100); a number in no range earns 0.")


class Question(_Checked):
    id: QuestionId = Field(description="Slug naming the question in results, overrides and trends; unique in the "
                           "form.")
    text: QuestionText = Field(min_length=1, description="The question as the reviewer reads it.")
    type: QuestionType = Field("yes_no", description="yes_no (yes earns the points; n/a leaves the question out), "
                               "choice (options with points) or number (point ranges).")
    weight: Weight = Field(description="The question's share of its section (0 to 100); the weights in one place "
                           "add up to 100.")
    auto_fail: Annotated[AutoFail, BeforeValidator(_auto_fail)] = Field(
        "none", description="An answer that earns no points sets the question's section (section) or the whole "
        "score (form) to 0; none: it does not. REST also reads false (none) and true (form).")
    applies_when: QuestionCondition | None = Field(
        None, description="When the question applies; unset: every call. Elsewhere it is answered n/a.")
    options: list[ChoiceOption] = Field(default_factory=list, max_length=OPTIONS_MAX,
                                        description="A choice question's options.")
    ranges: list[PointRange] = Field(default_factory=list, max_length=RANGES_MAX,
                                     description="A number question's point ranges.")
    answer: AnswerSource = Field(description="How the question is answered automatically (source: goal, category, "
                                 "pauses, talk_share, interruptions, longest_silence, hold, emotion, field, llm), or "
                                 "manual: by a reviewer only.")

    @property
    def max_points(self) -> int:
        """The points of a full answer: 1 for yes, the best option's or range's."""
        if self.type == "choice":
            return max((o.points for o in self.options), default=0)
        if self.type == "number":
            return max((r.points for r in self.ranges), default=0)
        return 1

    def problems(self) -> list[Problem]:
        out: list[Problem] = []
        source = self.answer.source
        if source not in SOURCES_BY_TYPE[self.type]:
            fits = ", ".join(t for t, sources in SOURCES_BY_TYPE.items() if source in sources)
            out.append(Problem(("answer", "source"), "unusable",
                               f"{source} cannot answer a {self.type} question (it answers: {fits})"))
        elif self.type == "yes_no" and source in _YES_NO_BOUNDS:
            bounds = _YES_NO_BOUNDS[source]
            if all(getattr(self.answer, b) is None for b in bounds):
                out.append(Problem(("answer",), "unusable", f"a yes_no question from {source} needs "
                                   + " or ".join(bounds) + " to compare with"))
        lo, hi = getattr(self.answer, "min", None), getattr(self.answer, "max", None)
        if lo is not None and hi is not None and lo > hi:
            out.append(Problem(("answer", "min"), "unusable", f"must not be greater than max ({lo} > {hi})"))
        if isinstance(self.answer, FieldAnswer) and self.answer.equals is not None and (lo, hi) != (None, None):
            out.append(Problem(("answer", "equals"), "unusable", "cannot be given with min or max"))
        if isinstance(self.answer, EmotionAnswer) and len(set(self.answer.emotions)) != len(self.answer.emotions):
            out.append(Problem(("answer", "emotions"), "repeated", "must not repeat an emotion"))
        out += self._options_problems() + self._ranges_problems()
        if self.applies_when is not None and self.applies_when.question == self.id:
            out.append(Problem(("applies_when", "question"), "cycle",
                               f"a question cannot depend on itself ({self.id})"))
        return out

    def _options_problems(self) -> list[Problem]:
        if self.type != "choice":
            return [Problem(("options",), "unusable", f"only a choice question has options, not a {self.type} one")] \
                if self.options else []
        if not self.options:
            return [Problem(("options",), "unusable", "a choice question needs options")]
        out: list[Problem] = []
        seen: set[str] = set()
        for i, option in enumerate(self.options):
            key = option.value.casefold()
            if key in seen:
                out.append(Problem(("options", i, "value"), "repeated", f"must not repeat an option ({option.value})"))
            if key == "n/a":
                out.append(Problem(("options", i, "value"), "unusable", "n/a is every question's own answer"))
            seen.add(key)
        if self.max_points == 0:
            out.append(Problem(("options",), "unusable", "at least one option must earn points"))
        return out

    def _ranges_problems(self) -> list[Problem]:
        if self.type != "number":
            return [Problem(("ranges",), "unusable", f"only a number question has ranges, not a {self.type} one")] \
                if self.ranges else []
        if not self.ranges:
            return [Problem(("ranges",), "unusable", "a number question needs point ranges")]
        out: list[Problem] = []
        for i, r in enumerate(self.ranges):
            if r.min is not None and r.max is not None and r.min > r.max:
                out.append(Problem(("ranges", i, "min"), "unusable",
                                   f"must not be greater than max ({r.min} > {r.max})"))
        ordered = sorted(((-1e300 if r.min is None else r.min, 1e300 if r.max is None else r.max, i)
                          for i, r in enumerate(self.ranges)))
        for (_, hi, i), (lo, _, j) in itertools.pairwise(ordered):
            if lo <= hi:
                out.append(Problem(("ranges", max(i, j)), "overlap", f"overlaps range {min(i, j)}"))
        if self.max_points == 0:
            out.append(Problem(("ranges",), "unusable", "at least one range must earn points"))
        return out


def _weights_problem(loc: tuple[str | int, ...], weights: Sequence[int], what: str) -> list[Problem]:
    if weights and sum(weights) != WEIGHT_TOTAL:
        return [Problem(loc, "weights", f"the weights of {what} must add up to {WEIGHT_TOTAL} (they add up to "
                        f"{sum(weights)})")]
    return []


class Subsection(_Checked):
    """A section inside a section: questions only (a form has at most two levels)."""

    name: Name = Field(description="Unique in the form.")
    weight: Weight = Field(description="The subsection's share of its section (0 to 100).")
    questions: list[Question] = Field(min_length=1, max_length=QUESTIONS_PER_SECTION_MAX)

    def problems(self) -> list[Problem]:
        return _weights_problem(("questions",), [q.weight for q in self.questions], "a section's questions")


class Section(_Checked):
    """A section of the form: questions, and/or subsections of questions."""

    name: Name = Field(description="Unique in the form.")
    weight: Weight = Field(description="The section's share of the form's score (0 to 100); the sections' weights "
                           "add up to 100.")
    questions: list[Question] = Field(default_factory=list, max_length=QUESTIONS_PER_SECTION_MAX)
    sections: list[Subsection] = Field(default_factory=list, max_length=SUBSECTIONS_MAX,
                                       description="Subsections (questions only).")

    def problems(self) -> list[Problem]:
        if not self.questions and not self.sections:
            return [Problem(("questions",), "too_short", "a section needs questions or sections")]
        return _weights_problem(("questions",) if not self.sections else (),
                                [q.weight for q in self.questions] + [s.weight for s in self.sections],
                                "a section's questions and sections")


@dataclass(frozen=True)
class Placed:
    """A question and where it sits: its section (and subsection), with its path in the form."""

    question: Question
    section: int
    subsection: int | None
    loc: tuple[str | int, ...]


class ScorecardForm(_Checked):
    """The body of a scorecard form: its sections (REST and YAML alike)."""

    sections: list[Section] = Field(min_length=1, max_length=SECTIONS_MAX,
                                    description="The form's sections; their weights add up to 100.")

    def placed(self) -> Iterator[Placed]:
        """Every question with its place, in the form's order."""
        for s, section in enumerate(self.sections):
            for q, question in enumerate(section.questions):
                yield Placed(question, s, None, ("sections", s, "questions", q))
            for u, sub in enumerate(section.sections):
                for q, question in enumerate(sub.questions):
                    yield Placed(question, s, u, ("sections", s, "sections", u, "questions", q))

    def questions(self) -> list[Question]:
        return [p.question for p in self.placed()]

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions() if q.id == question_id), None)

    def problems(self) -> list[Problem]:
        out = _weights_problem(("sections",), [s.weight for s in self.sections], "the form's sections")
        placed = list(self.placed())
        if len(placed) > QUESTIONS_MAX:
            out.append(Problem(("sections",), "too_long", f"a form has at most {QUESTIONS_MAX} questions (this one "
                               f"has {len(placed)})"))
        asked = [p for p in placed if p.question.answer.source == "llm"]
        if len(asked) > LLM_QUESTIONS_MAX:
            out.append(Problem((*asked[LLM_QUESTIONS_MAX].loc, "answer"), "too_long", f"a form puts at most "
                               f"{LLM_QUESTIONS_MAX} questions to the language model"))
        names: dict[str, tuple[str | int, ...]] = {}
        for s, section in enumerate(self.sections):
            for loc, name in [(("sections", s, "name"), section.name)] + [
                    (("sections", s, "sections", u, "name"), sub.name) for u, sub in enumerate(section.sections)]:
                if name.casefold() in names:
                    out.append(Problem(loc, "repeated", f"must not repeat a section name ({name})"))
                names.setdefault(name.casefold(), loc)
        by_id: dict[str, Placed] = {}
        for p in placed:
            if p.question.id in by_id:
                out.append(Problem((*p.loc, "id"), "repeated", f"must not repeat a question id ({p.question.id})"))
            by_id.setdefault(p.question.id, p)
        for p in placed:
            condition = p.question.applies_when
            if condition is None or condition.question is None or condition.question == p.question.id:
                continue
            target = by_id.get(condition.question)
            where = (*p.loc, "applies_when", "question")
            if target is None:
                out.append(Problem(where, "unusable", f"names no question of the form ({condition.question})"))
            elif target.question.type == "choice":
                allowed = {o.value.casefold() for o in target.question.options} | {"n/a"}
                wrong = [a for a in condition.answers if a.casefold() not in allowed]
                if wrong:
                    out.append(Problem((*p.loc, "applies_when", "answers"), "unusable",
                                       f"{', '.join(wrong)} is not an answer of {target.question.id}"))
            elif target.question.type == "yes_no":
                wrong = [a for a in condition.answers if a.casefold() not in ("yes", "no", "n/a")]
                if wrong:
                    out.append(Problem((*p.loc, "applies_when", "answers"), "unusable",
                                       f"{', '.join(wrong)} is not an answer of the yes_no question "
                                       f"{target.question.id} (yes, no or n/a)"))
            else:
                out.append(Problem(where, "unusable", f"a condition can name a yes_no or choice question, not the "
                                   f"number question {target.question.id}"))
        out += _cycles(placed, by_id)
        return out


def depends_on(question: Question) -> str | None:
    """The id of the question whose answer decides whether this one applies, or None."""
    return question.applies_when.question if question.applies_when is not None else None


def _cycles(placed: list[Placed], by_id: dict[str, Placed]) -> list[Problem]:
    """A condition cycle (a -> b -> a), reported once at the first question of it, with the whole cycle."""
    out: list[Problem] = []
    reported: set[str] = set()
    for p in placed:
        path = [p.question.id]
        current = depends_on(p.question)
        while current is not None and current in by_id and current not in path:
            path.append(current)
            current = depends_on(by_id[current].question)
        if current is not None and current == p.question.id and len(path) > 1 and not reported & set(path):
            reported |= set(path)
            out.append(Problem((*p.loc, "applies_when", "question"), "cycle",
                               "conditions form a cycle: " + " -> ".join([*path, p.question.id])))
    return out


def order_of_answering(form: ScorecardForm) -> list[Question]:
    """The questions, each after the question its condition names (a valid form has no cycle)."""
    by_id = {q.id: q for q in form.questions()}
    done: dict[str, Question] = {}

    def visit(question: Question) -> None:
        if question.id in done:
            return
        before = depends_on(question)
        if before is not None and before in by_id and before not in done:
            visit(by_id[before])
        done[question.id] = question

    for question in by_id.values():
        visit(question)
    return list(done.values())


# ----- references to the attached projects ------------------------------------------------------------------------

def _loc_text(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in loc)


def missing_references(form: ScorecardForm, projects: Sequence[tuple[str, ProjectSpec]]) -> list[str]:
    """Each goal, category and field the form names that an attached project lacks (its calls could not answer the
    question), as "path: what is missing" (``sections.0.questions.2.answer.goal_id: no goal 7 in project Support``).
    ``projects``: (name as shown, spec) of each attached project."""
    out: list[str] = []
    for p in form.placed():
        refs: list[tuple[tuple[str | int, ...], str, Any]] = []
        answer, condition = p.question.answer, p.question.applies_when
        if isinstance(answer, GoalAnswer):
            refs.append(((*p.loc, "answer", "goal_id"), "goal", answer.goal_id))
        elif isinstance(answer, CategoryAnswer):
            refs.append(((*p.loc, "answer", "name"), "category", answer.name))
        elif isinstance(answer, FieldAnswer):
            refs.append(((*p.loc, "answer", "name"), "field", answer.name))
        if condition is not None:
            for key, what in (("goal_id", "goal"), ("category", "category"), ("field", "field")):
                if getattr(condition, key) is not None:
                    refs.append(((*p.loc, "applies_when", key), what, getattr(condition, key)))
        for loc, what, value in refs:
            for name, spec in projects:
                if not _has(spec, what, value):
                    out.append(f"{_loc_text(loc)}: no {what} {value} in project {name}")
    return out


def _has(spec: ProjectSpec, what: str, value: Any) -> bool:
    if what == "goal":
        return any(g.id == value for g in spec.goals)
    if what == "category":
        return any(c.name.casefold() == str(value).casefold() for c in spec.categories)
    return any(f.name == value for f in spec.fields)
