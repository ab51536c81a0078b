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
    if result.channels == 1:
        add("  speakers  mono recording: the whole call is shown as one speaker, speaker-1 "
            "(splitting a mono call into speakers is not available yet)")
    else:
        add("  speakers  one per channel: " + ", ".join(
            f"{speaker} = channel {i + 1}" + (" (left)" if i == 0 and result.channels == 2 else "")
            + (" (right)" if i == 1 and result.channels == 2 else "") for i, speaker in enumerate(result.speakers)))
    add("")
    add("Speakers")
    talked = {s.speaker: s for s in c.speakers}
    for speaker in result.speakers:
        s = talked.get(speaker)
        if s is None:
            add(f"  {speaker:<10}  did not speak")
            continue
        add(f"  {speaker:<10}  talk {seconds(s.talk_time_ms):>8}  {s.words:>5} words  {s.words_per_minute:>6.1f} wpm  "
            f"{s.interruptions} interruption(s)")
    add(f"  {'silence':<10}  non-talk {seconds(c.non_talk_time_ms)} of {seconds(c.duration_ms)}")
    add("")
    add(f"Transcript ({len(result.dialogue)} segments)")
    if not result.dialogue:
        add("  (no speech recognised)")
    pauses_after: dict[int, list] = {}
    for pause in result.pauses:
        pauses_after.setdefault(pause.after_dialogue_id, []).append(pause)
    for segment in result.dialogue:
        add(f"  #{segment.id:<3} [{clock(segment.start_ms)} - {clock(segment.end_ms)}] {segment.speaker}: {segment.text}")
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
    add("Models")
    for model in result.models:
        add(f"  {model.stage:<10}  {model.name} ({model.version})")
    add("")
    add("Stages")
    add("  ran:           " + ", ".join(s.name for s in result.stages if s.ran))
    add("  not available: " + ", ".join(s.name for s in result.stages if not s.ran))
    for stage in result.stages:
        if not stage.ran and stage.detail and stage.detail != "not available yet":
            add(f"  {stage.name}: {stage.detail}")
    return "\n".join(lines)
