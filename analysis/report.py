"""A readable text report of an AnalysisResult (what `callscope analyze` prints)."""

from __future__ import annotations

from callscope.analysis.result import AnalysisResult


def clock(ms: int) -> str:
    """Milliseconds as m:ss.s (or h:mm:ss.s)."""
    tenths = round(ms / 100)
    seconds, tenth = divmod(tenths, 10)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}.{tenth}" if hours else f"{minute}:{second:02d}.{tenth}"


def seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def render(result: AnalysisResult, name: str = "") -> str:
    """The result as the plain-text report `callscope analyze` prints: one block per section."""
    sections = (_header(result, name), _speakers(result), _summary(result), _redaction(result), _transcript(result),
                _pauses(result), _goals(result), _categories(result), _fields(result), _models(result),
                _stages(result))
    return "\n".join(line for section in sections for line in section)


def _header(result: AnalysisResult, name: str) -> list[str]:
    kind = "stereo" if result.channels == 2 else ("mono" if result.channels == 1 else f"{result.channels} channels")
    return [f"Call {name}".rstrip(),
            f"  duration  {clock(result.duration_ms)} ({kind}), language {result.language or 'auto-detected'}", ""]


def _speakers(result: AnalysisResult) -> list[str]:
    c = result.characteristics
    lines = ["Speakers"]
    talked = {s.speaker: s for s in c.speakers}
    for speaker in result.speakers:
        role = speaker.role + (f" (operator {speaker.operator_id})" if speaker.operator_id is not None else "")
        s = talked.get(speaker.label)
        if s is None:
            lines.append(f"  {speaker.label:<10}  {role:<9}  did not speak")
            continue
        lines.append(f"  {speaker.label:<10}  {role:<9}  talk {seconds(s.talk_time_ms):>8}  {s.words:>5} words  "
                     f"{s.words_per_minute:>6.1f} wpm  {s.interruptions} interruption(s)")
    lines += [f"  {'silence':<10}  non-talk {seconds(c.non_talk_time_ms)} of {seconds(c.duration_ms)}", ""]
    return lines


def _redaction(result: AnalysisResult) -> list[str]:
    if result.redaction is None:
        return []
    counts = ", ".join(f"{entity} {result.redaction.counts.get(entity, 0)}" for entity in result.redaction.entities)
    return ["Redacted (spans per type; the values are not kept)", f"  {counts}", ""]


def _summary(result: AnalysisResult) -> list[str]:
    return [f"Summary ({result.summary_language})", f"  {result.summary}", ""] if result.summary else []


def _transcript(result: AnalysisResult) -> list[str]:
    lines = [f"Transcript ({len(result.segments)} segments)"]
    if not result.segments:
        lines.append("  (no speech recognised)")
    pauses_after: dict[int, list] = {}
    for pause in result.pauses:
        pauses_after.setdefault(pause.after_dialogue_id, []).append(pause)
    for segment in result.segments:
        mood = max(segment.emotions, key=segment.emotions.get) if segment.emotions else ""
        lines.append(f"  #{segment.id:<3} [{clock(segment.start_ms)} - {clock(segment.end_ms)}] {segment.speaker}: "
                     f"{segment.text}" + (f"  ({mood} {segment.emotions[mood]:.2f})" if mood else ""))
        for pause in pauses_after.get(segment.id, []):
            lines.append(f"        ... {seconds(pause.duration_ms)} silence{' (long)' if pause.long else ''}")
    return [*lines, ""]


def _pauses(result: AnalysisResult) -> list[str]:
    rules = result.pause_rules
    lines = [f"Pauses ({len(result.pauses)}; at least {seconds(rules.min_pause_ms)}, long from "
             f"{seconds(rules.long_pause_threshold_ms)}, a long one is compliant after a hold announcement and up to "
             f"{seconds(rules.max_hold_ms)})"]
    if not result.pauses:
        lines.append("  (none)")
    for pause in result.pauses:
        lines.append(f"  [{clock(pause.start_ms)} - {clock(pause.end_ms)}] {seconds(pause.duration_ms):>8} after "
                     f"#{pause.after_dialogue_id}  {'LONG' if pause.long else 'short'}  "
                     f"{'compliant' if pause.compliant else 'NOT compliant'}")
    return [*lines, ""]


def _goals(result: AnalysisResult) -> list[str]:
    if not result.goals:
        return []
    applicable = [g for g in result.goals if g.applicable]
    lines = [f"Goals ({sum(1 for g in applicable if g.met)} of {len(applicable)} met)"]
    for goal in result.goals:
        verdict = "N/A    " if not goal.applicable else "MET    " if goal.met else "NOT MET"
        lines += [f"  {verdict}  {goal.goal_name} (score {goal.score:.2f})",
                  f"           {goal.explanation}"]
    return [*lines, ""]


def _categories(result: AnalysisResult) -> list[str]:
    if not result.categories:
        return []
    return ["Categories", *(f"  {'yes' if c.matched else 'no ':<4} {c.name} (score {c.score:.2f})"
                            for c in result.categories), ""]


def _fields(result: AnalysisResult) -> list[str]:
    if not result.extracted_data:
        return []
    return ["Extracted fields", *(f"  {f.name:<20} {f.value if f.value is not None else '(not found)'}"
                                  for f in result.extracted_data), ""]


def _models(result: AnalysisResult) -> list[str]:
    return ["Models", *(f"  {m.stage:<10}  {m.name} ({m.version})" for m in result.models), ""]


def _stages(result: AnalysisResult) -> list[str]:
    lines = ["Stages", "  ran:           " + ", ".join(s.name for s in result.stages if s.ran),
             "  not run:       " + (", ".join(s.name for s in result.stages if not s.ran) or "none")]
    return lines + [f"  {s.name}: {s.detail}" for s in result.stages if not s.ran and s.detail]
