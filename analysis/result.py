"""The analysis result: one typed model, declared here once. Each stage returns its parts (segments and their words,
speakers, emotions, pauses, characteristics, goals, categories, fields, summary), the pipeline assembles them into an
``AnalysisResult``, and everything that shows a result derives from it: the stored documents (stored.py), the REST
read-outs and the webhook sections (readouts.py, re-exported by api/schemas.py for the OpenAPI document) and
`callscope analyze` (its JSON, and report.py).

The parts carry the names of the public API's schemas (``TranscriptSegment``, ``GoalResult``...): the OpenAPI
document names its components after these classes. This module imports nothing of the analysis, so every stage can
import it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Emotion = Literal["happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust"]
EMOTIONS: tuple[Emotion, ...] = get_args(Emotion)  # the spec's eight classes, in the order results list them
Role = Literal["agent", "customer", "unknown"]


def _without_defaults(schema: dict[str, Any]) -> None:
    for field in schema.get("properties", {}).values():
        field.pop("default", None)


class Part(BaseModel):
    # Every field is in every dump, defaults included: the published schema requires them all, and shows no
    # default, which a reader never sees. A validation error names the field, never its value: the values are the
    # call's words (a transcript, a quote, a summary), and an error's text reaches the log and a failure reason.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True, json_schema_extra=_without_defaults,
                              hide_input_in_errors=True)


class TranscriptWord(Part):
    start_ms: int
    end_ms: int
    text: str
    probability: float = Field(description="Recogniser confidence, 0 to 1.")
    redacted: bool = Field(False, description="The word is part of a redacted span: the span's first word reads as "
                           "its token ([PAYMENT_CARD]), its other words are empty; the times stay.")
    entity: str | None = Field(None, description="The redacted entity type (payment_card...), or null.")


class TranscriptSegment(Part):
    """One dialogue segment: a speaker's turn with its words."""

    id: int = Field(description="Dialogue id; pauses and evidence refer to it (after_dialogue_id, dialogue_id).")
    speaker: str = Field(description='Speaker label: "speaker-1" speaks first (or is channel 1 of a stereo call).')
    role: Role = "unknown"  # the speaker's, once the speakers are identified
    channel: int
    start_ms: int
    end_ms: int
    text: str
    words: list[TranscriptWord] = Field(default_factory=list)
    emotions: dict[Emotion, float] = Field(
        default_factory=dict,
        description="Probability of each of the eight emotions, 0 to 1, summing to about 1 (empty when not analysed).",
    )


class SpeakerResult(Part):
    label: str
    role: Role
    role_confidence: float = Field(description="0 to 1.")
    operator_id: int | None = Field(None, description="The operator whose enrolled voice matched, or null.")
    operator_similarity: float | None = Field(None, description="Voice similarity to that operator, or null.")
    talk_ms: int


class IdentifiedSpeaker(SpeakerResult):
    """A speaker with what its role rests on. The public read-outs declare ``SpeakerResult``, so they show a speaker
    without these two fields (pydantic serialises a field as its declared class)."""

    role_evidence: list[str]
    decided_by: Literal["operator-voice", "content", "first-speaker", "channel", "none"]


class Evidence(Part):
    dialogue_id: int = Field(description="Id of the dialogue segment the quote is from.")
    start_ms: int = Field(description="When the quoted words start.")
    quote: str = Field(description="Words of the segment, verbatim.")


class GoalResult(Part):
    goal_id: int
    goal_name: str
    met: bool
    score: float = Field(ge=0, le=1, description="Confidence score, 0 to 1.")
    explanation: str
    evidence: list[Evidence] = Field(default_factory=list, description="The transcript lines the verdict rests on.")
    applicable: bool = Field(
        True, description="False when the goal's situation (its appliesWhen: a hold, a phrase) did not occur in the "
        "call: met is then false, and the goal counts in no rate (trends, the tally). Absent in older results: true.")


class CategoryResult(Part):
    name: str
    matched: bool
    score: float = Field(description="0 to 1.")
    evidence: list[Evidence] = Field(default_factory=list)


class ExtractedValue(Part):
    name: str
    type: str
    value: str | float | bool | None = Field(description="Validated value; null when none was found.")
    evidence: list[Evidence] = Field(default_factory=list)
    confidence: float | None = Field(
        None, ge=0, le=1, description="The recogniser's probability (0 to 1) of the least sure word the value was "
        "heard in, where it was heard most surely; below 0.5 the value rests on words the recogniser doubted and "
        "is shown as uncertain. Null: no value, a boolean, or no word timings.")


class Pause(Part):
    start_ms: int
    end_ms: int
    duration_ms: int
    compliant: bool
    after_dialogue_id: int
    long: bool = Field(description="At least the project's long_pause_threshold_seconds.")


class PauseRules(Part):
    """The pause rules a result was found with (analysis/stages/pauses.py applies them; the defaults are documented
    there)."""

    long_pause_threshold_ms: int = Field(5_000, ge=0)
    max_hold_ms: int = Field(120_000, ge=0)
    min_pause_ms: int = Field(1_000, ge=1)
    hold_phrases: list[str] = Field(default_factory=lambda: [
        "please hold", "hold on", "hold the line", "on hold", "one moment", "one second", "just a moment",
        "just a second", "give me a moment", "give me a second", "let me check", "let me look", "let me see",
        "bear with me"])


class SpeakerTraits(Part):
    speaker: str
    channel: int
    talk_time_ms: int = Field(description="Time the speaker was talking.")
    words: int = Field(description="Words spoken.")
    words_per_minute: float = Field(description="Words per minute of talk time.")
    interruptions: int = Field(description="Times the speaker started talking over another speaker.")


class CallCharacteristics(Part):
    duration_ms: int
    talk_time_ms: int = Field(description="Time at least one speaker was talking.")
    non_talk_time_ms: int = Field(description="Duration minus the time anyone was talking.")
    speakers: list[SpeakerTraits] = Field(description="One entry per speaker, in channel order.")

    def speaker(self, name: str) -> SpeakerTraits:
        return next(s for s in self.speakers if s.speaker == name)


class ModelUsed(Part):
    """Which model a stage used, reported with its results."""

    model_config = ConfigDict(frozen=True)  # hashable: the pipeline lists each model once

    stage: str
    name: str
    version: str


class StageRun(Part):
    """Whether a stage ran, and what it found or why it did not run."""

    name: str
    ran: bool
    detail: str = ""
    # wall seconds from the end of the stage before (absent in older results): observed as metrics by the dispatcher
    seconds: float | None = None


class RedactionSummary(Part):
    """What redaction took out of the transcript: the entity types the project asked for, and the number of spans
    of each (never the values)."""

    entities: list[str] = Field(description="The entity types redacted (the project's redaction.entities).")
    counts: dict[str, int] = Field(description="Spans redacted per entity type, each requested type listed.")
    audio: bool = Field(False, description="The recording's audio has the same spans replaced by a tone or silence "
                        "(its audio_url serves only that copy).")
    mode: str = Field("precise", description="The project's redaction.mode: precise or strict.")
    tones: int = Field(0, description="Keypad tones (DTMF) replaced in the audio, where the audio is redacted.")
    unheard: list[tuple[int, int]] = Field(
        default_factory=list, description="Strict mode: [start_ms, end_ms] of each stretch of speech the recogniser "
        "wrote no words for. What was said there is unknown, so where the audio is redacted it is replaced as a "
        "redacted span is.")
    found_by: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Per entity type, the spans each rule found: words (the values the rules "
        "read in the words), and in strict mode request (an answer to a request, whole, the request found by its "
        "words), request_meaning (the same, the request found by its meaning), digit_run (a run of spoken digits), "
        "value_window (a turn with a number in it while a card or bank details were given, or the giver's turn), "
        "spelled (a turn spelling something out soon after an e-mail was named), email_shape (words in the "
        "shape of an e-mail: around a mail provider's name, or two heard dots soon after an e-mail was named) and "
        "low_confidence "
        "(words around a span the recogniser doubted). A span counts under each rule that found some of its words, "
        "so they may add up to more than counts; spans an earlier analysis redacted (carried in counts) are not in "
        "them. Empty in results made before it was added.")


class ScorecardEvidence(Part):
    """What a scorecard answer rests on: words of the call with their times, or the figure it came from (a talk
    share, a pause's length), with the times it spans where it has some."""

    text: str = Field(description="The words quoted verbatim, or the figure in words.")
    start: float | None = Field(description="Seconds from the start of the call; null for a figure of the whole call.")
    end: float | None = Field(description="Seconds from the start of the call; null for a figure of the whole call.")


class AnswerChange(Part):
    """One override of a scorecard answer by a reviewer."""

    by: str = Field(description="Who changed it (a member's email, or an API key's name).")
    at: datetime = Field(description="When (UTC).")
    from_answer: str | float | None = Field(description="The answer before (null: unanswered).")
    to_answer: str | float | None = Field(description="The answer after.")
    comment: str = Field("", description="Why, in the reviewer's words.")


ScorecardAnswerValue = str | float | None


class ScorecardAnswer(Part):
    """One question's answer: yes, no or n/a (yes_no), an option (choice), a number, or null (unanswered: a manual
    question no reviewer answered yet). n/a and null leave the question out of its section's score."""

    question_id: str
    answer: ScorecardAnswerValue = Field(description="The answer that counts: the reviewer's where overridden, else "
                                         "the automatic one; n/a where the question does not apply.")
    points: float | None = Field(description="Points the answer earns (yes 1, no 0; an option's or range's); null "
                                 "for n/a and unanswered.")
    max_points: float = Field(description="Points of a full answer: 1 for yes/no, the best option's or range's.")
    source: str = Field(description="How it was answered automatically: goal, category, pauses, talk_share, "
                        "interruptions, longest_silence, hold, emotion, field, llm or manual.")
    evidence: list[ScorecardEvidence] = Field(default_factory=list)
    note: str = Field("", description="Why the automatic answer is what it is where the evidence does not say (n/a: "
                      "the goal's situation did not occur, no language model...).")
    automatic: ScorecardAnswerValue = Field(
        None, description="The automatic answer, kept when a reviewer overrides it (null: none, e.g. manual).")
    applicable: bool = Field(True, description="Whether the question's condition (applies_when) held.")
    call_condition: bool = Field(
        True, description="Whether the parts of the condition about the call held (phrases, a long pause, a "
        "category, a goal, a field); the part naming another question is decided again from that one's answer.")
    overridden: bool = False
    history: list[AnswerChange] = Field(default_factory=list, description="The overrides, oldest first.")


class SubsectionScore(Part):
    name: str
    score: float | None = Field(description="0 to 100; null when none of its questions was answered.")
    auto_failed: bool = Field(False, description="An automatic fail set it to 0.")


class SectionScore(SubsectionScore):
    sections: list[SubsectionScore] = Field(default_factory=list, description="Its subsections' scores.")


class ScorecardResult(Part):
    """A call scored against one QA form (callscope/resources/scorecards.py; analysis/stages/scorecard.py)."""

    scorecard_id: int
    name: str
    version: int = Field(description="The form's version the call was scored with.")
    score: float | None = Field(description="0 to 100: the sections' scores by their weights, n/a ones left out; "
                                "0 after an automatic fail of the form; null when nothing was answered.")
    auto_failed: bool = Field(description="An answer failed its section or the whole form automatically.")
    sections: list[SectionScore]
    answers: list[ScorecardAnswer]


class AnalysisResult(Part):
    duration_ms: int
    channels: int
    language: str | None = Field(description="Transcription language: the project's, or None (detected by ASR).")
    speakers: list[IdentifiedSpeaker]
    segments: list[TranscriptSegment]
    pauses: list[Pause]
    pause_rules: PauseRules
    characteristics: CallCharacteristics
    goals: list[GoalResult] = Field(default_factory=list)
    categories: list[CategoryResult] = Field(default_factory=list)
    extracted_data: list[ExtractedValue] = Field(default_factory=list)
    summary: str | None = None
    summary_language: str | None = None
    redaction: RedactionSummary | None = Field(
        None, description="What was redacted, when the project redacts; the segments read redacted then.")
    models: list[ModelUsed]
    stages: list[StageRun]
    scorecards: list[ScorecardResult] = Field(
        default_factory=list, description="The call scored against each QA form of its project (absent in older "
        "results: none).")

    @property
    def quality_score(self) -> float | None:
        """The mean goal score (0..1), None when no goal was evaluated."""
        return sum(g.score for g in self.goals) / len(self.goals) if self.goals else None
