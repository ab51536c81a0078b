"""A readable text report of an AnalysisResult (what `callscope analyze` prints)."""

from __future__ import annotations

from callscope.analysis.pipeline import AnalysisResult


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
    lines: list[str] = []
    add = lines.append
    c = result.characteristics
    kind = "stereo" if result.channels == 2 else ("mono" if result.channels == 1 else f"{result.channels} channels")
    add(f"Call {name}".rstrip())
    add(f"  duration  {clock(result.duration_ms)} ({kind}), language {result.language or 'auto-detected'}")
    add("")
    add("Speakers")
    talked = {s.speaker: s for s in c.speakers}
    for speaker in result.speakers:
        role = speaker.role + (f" (operator {speaker.operator_id})" if speaker.operator_id is not None else "")
        s = talked.get(speaker.label)
        if s is None:
            add(f"  {speaker.label:<10}  {role:<9}  did not speak")
            continue
        add(f"  {speaker.label:<10}  {role:<9}  talk {seconds(s.talk_time_ms):>8}  {s.words:>5} words  "
            f"{s.words_per_minute:>6.1f} wpm  {s.interruptions} interruption(s)")
    add(f"  {'silence':<10}  non-talk {seconds(c.non_talk_time_ms)} of {seconds(c.duration_ms)}")
    add("")
    if result.summary:
        add(f"Summary ({result.summary_language})")
        add(f"  {result.summary}")
        add("")
    add(f"Transcript ({len(result.dialogue)} segments)")
    if not result.dialogue:
        add("  (no speech recognised)")
    pauses_after: dict[int, list] = {}
    for pause in result.pauses:
        pauses_after.setdefault(pause.after_dialogue_id, []).append(pause)
    for segment in result.dialogue:
        mood = max(segment.emotions, key=segment.emotions.get) if segment.emotions else ""
        add(f"  #{segment.id:<3} [{clock(segment.start_ms)} - {clock(segment.end_ms)}] {segment.speaker}: {segment.text}"
            + (f"  ({mood} {segment.emotions[mood]:.2f})" if mood else ""))
        for pause in pauses_after.get(segment.id, []):
            add(f"        ... {seconds(pause.duration_ms)} silence{' (long)' if pause.long else ''}")
    add("")
    rules = result.pause_rules
    add(f"Pauses ({len(result.pauses)}; at least {seconds(rules.min_pause_ms)}, long from "
        f"{seconds(rules.long_pause_threshold_ms)}, a long one is compliant after a hold announcement and up to "
        f"{seconds(rules.max_hold_ms)})")
    if not result.pauses:
        add("  (none)")
    for pause in result.pauses:
        add(f"  [{clock(pause.start_ms)} - {clock(pause.end_ms)}] {seconds(pause.duration_ms):>8} after #{pause.after_dialogue_id}"
            f"  {'LONG' if pause.long else 'short'}  {'compliant' if pause.compliant else 'NOT compliant'}")
    add("")
    if result.goals:
        add(f"Goals ({sum(1 for g in result.goals if g['met'])} of {len(result.goals)} met)")
        for goal in result.goals:
            add(f"  {'MET    ' if goal['met'] else 'NOT MET'}  {goal['goal_name']} (score {goal['score']:.2f})")
            add(f"           {goal['explanation']}")
        add("")
    if result.categories:
        add("Categories")
        for category in result.categories:
            add(f"  {'yes' if category['matched'] else 'no ':<4} {category['name']} (score {category['score']:.2f})")
        add("")
    if result.extracted_data:
        add("Extracted fields")
        for found in result.extracted_data:
            add(f"  {found['name']:<20} {found['value'] if found['value'] is not None else '(not found)'}")
        add("")
    add("Models")
    for model in result.models:
        add(f"  {model.stage:<10}  {model.name} ({model.version})")
    add("")
    add("Stages")
    add("  ran:           " + ", ".join(s.name for s in result.stages if s.ran))
    add("  not run:       " + (", ".join(s.name for s in result.stages if not s.ran) or "none"))
    for stage in result.stages:
        if not stage.ran and stage.detail:
            add(f"  {stage.name}: {stage.detail}")
    return "\n".join(lines)
