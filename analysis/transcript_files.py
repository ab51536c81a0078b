"""A transcript as the files people open it in: plain text, SubRip (.srt) and WebVTT (.vtt), each line or cue with its
speaker's name (`names`: speaker label -> what the reader calls them, "Agent", "Customer", "Speaker 2"). Read from
the segments as the API serves them (redacted where the project redacts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from callscope.analysis.result import TranscriptSegment


def _clock(ms: int, separator: str) -> str:
    hours, rest = divmod(max(ms, 0), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def _said(segment: TranscriptSegment, names: Mapping[str, str]) -> tuple[str, str]:
    return names.get(segment.speaker, segment.speaker), " ".join(segment.text.split())


def as_text(segments: Sequence[TranscriptSegment], names: Mapping[str, str]) -> str:
    """One line a segment: `[0:01:02] Agent: words`."""
    lines = []
    for segment in segments:
        who, text = _said(segment, names)
        lines.append(f"[{_clock(segment.start_ms, '.')[:8]}] {who}: {text}")
    return "\n".join(lines) + "\n" if lines else ""


def as_srt(segments: Sequence[TranscriptSegment], names: Mapping[str, str]) -> str:
    """SubRip: numbered cues, `00:00:01,000 --> 00:00:04,500`, the speaker before the words."""
    cues = []
    for n, segment in enumerate(segments, 1):
        who, text = _said(segment, names)
        cues.append(f"{n}\n{_clock(segment.start_ms, ',')} --> {_clock(segment.end_ms, ',')}\n{who}: {text}\n")
    return "\n".join(cues)


def _vtt_text(text: str) -> str:
    # a cue's text may not hold "-->", and "&" and "<" start entities and tags
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def as_webvtt(segments: Sequence[TranscriptSegment], names: Mapping[str, str]) -> str:
    """WebVTT: each cue's speaker as a voice span (`<v Agent>`), which players show and screen readers announce."""
    cues = ["WEBVTT\n"]
    for segment in segments:
        who, text = _said(segment, names)
        cues.append(f"{_clock(segment.start_ms, '.')} --> {_clock(segment.end_ms, '.')}\n"
                    f"<v {_vtt_text(who)}>{_vtt_text(text)}\n")
    return "\n".join(cues)
