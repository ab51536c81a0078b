"""Audio handling: probing uploaded recordings (see :mod:`callscope.audio.probe`)."""

from callscope.audio.probe import CONTENT_TYPES, AudioFormat, AudioInfo, format_from_filename, probe

__all__ = ["CONTENT_TYPES", "AudioFormat", "AudioInfo", "format_from_filename", "probe"]
