"""The Scorecard kind: a QA form (callscope/resources/scorecards.py, which builds on kinds.py's models) with its name,
the projects it scores and how calls are picked for review. Registered among the KINDS when the package is imported.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from callscope.resources.kinds import Project, register
from callscope.resources.meta import BaseStatus, CamelModel, Resource
from callscope.resources.scorecards import ScorecardForm
from callscope.validation import Name, Percent

SCORECARD_PROJECTS_MAX = 256
ReviewPeriod = Literal["week", "month"]


class ReviewSampling(CamelModel):
    """Which calls of each attached project wait for a reviewer: a random sample of each agent's calls per period,
    the same all the period, and every call that failed automatically or scored low."""

    calls_per_agent: int = Field(5, ge=0, le=1000, description="Calls of each agent sampled per period (0: none).")
    period: ReviewPeriod = Field("month", description="week (from Monday, UTC) or month.")
    below_score: Percent | None = Field(
        60, description="Calls scoring below this (0 to 100) wait for review as well; null: none for their score.")


class ScorecardSpec(ScorecardForm):
    """A QA form: its sections of weighted questions (callscope/resources/scorecards.py says their rules), the
    projects whose calls it scores, and how calls are picked for review."""

    name: Name = Field(description="Display name of the form, shown with each call's score.")
    projects: list[str] = Field(
        default_factory=list, max_length=SCORECARD_PROJECTS_MAX,
        description="Names of the projects whose analysed calls are scored with this form.")
    review: ReviewSampling = Field(default_factory=ReviewSampling, description="Which calls wait for a reviewer.")


class Scorecard(Resource[ScorecardSpec, BaseStatus]):
    """Its version is metadata.generation: one more with every change of the spec."""

    KIND = "Scorecard"
    PLURAL = "scorecards"
    SHORT_NAMES = ("csscorecard", "cssc")
    kind: Literal["Scorecard"] = "Scorecard"
    spec: ScorecardSpec
    status: BaseStatus = Field(default_factory=BaseStatus)

    @property
    def version(self) -> int:
        return self.metadata.generation or 1

    def references(self) -> list[tuple[str, str]]:
        return [(Project.KIND, name) for name in self.spec.projects]


register(Scorecard)
