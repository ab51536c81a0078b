"""The transcription models a project may name: those the site configures (CALLSCOPE_WHISPER_MODELS). A project
naming another is refused where it is written (REST, `callscope apply`) and not Ready where it is applied past them
(kubectl), with a message that names the site's models."""

from __future__ import annotations

from callscope.config import Settings
from callscope.errors import ValidationFailed
from callscope.resources.kinds import ProjectSpec


def unknown_model(spec: ProjectSpec, settings: Settings) -> str | None:
    """Why the project's transcription.model cannot be used; None where it can (none named, or one the site has)."""
    name = spec.transcription_model
    if name is None or name in settings.whisper_models:
        return None
    known = ", ".join(sorted(settings.whisper_models))
    return (f"transcription.model {name!r} is not a transcription model of this site: "
            + (f"it has {known}" if known else "it configures none") + " (CALLSCOPE_WHISPER_MODELS)")


def check_model(spec: ProjectSpec, settings: Settings) -> None:
    """ValidationFailed (422 on the API) where the project names a model the site does not configure."""
    if (problem := unknown_model(spec, settings)) is not None:
        raise ValidationFailed([problem])
