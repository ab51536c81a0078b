"""Schemathesis hooks for tests/test_openapi_conformance.py (loaded by `st run` through SCHEMATHESIS_HOOKS).

- positive_data_acceptance_of_the_shape: schemathesis' positive_data_acceptance, less the 422s that depend on
  the state of the world rather than on the request's shape, which no schema can state: a phone number
  libphonenumber does not know, an id of another project, a file that is not audio, the provider's stock; and a
  search's query that holds no word to search for (or only excluded ones, or too many), or goal_met without goal_id;
  a project's trackers whose query is such a query, or whose names repeat (JSON Schema's uniqueItems compares whole
  items, not one of their fields); a scorecard's form, whose rules only the resource model states, and a review's
  answers, which its recording's form decides; a project's transcription model, one of the site's
  (CALLSCOPE_WHISPER_MODELS).
- flatmap_case: valid requests to a recording's paths name the seeded recording half of the time
  (CALLSCOPE_FUZZ_RECORDINGS: its public_id and legacy id), so that they get past the 404.
"""

from __future__ import annotations

import os
import re

import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance

RECORDING_PATH = "/api/v1/public/recordings/{id}"
SEEDED = os.environ.get("CALLSCOPE_FUZZ_RECORDINGS", "").split()

STATEFUL = re.compile("|".join([
    r"^Phone number is invalid$", r"has already been taken$", r"^operator_id is not an operator this API key can see$",
    r"^tag_ids .* are not tags of project", r"^conversation_id is not a recording this API key can see$",
    r"^Not a member of this account$", r"^Recording is processing-restricted$",
    r"^No .* numbers are available in ", r"^Requirement group", r"^Unknown country code",
    r"must be in E.164 format$", r"is not an? .* number$", r"does not belong to country",  # the provider's view
    r"^Unsupported audio format", r"^Audio file is truncated or corrupt$", r"^File is empty$",
    r"^File has no audio stream$",  # the file's content, which the document calls binary
    r"^q has no word to search for", r"^q must name a word to find", r"^q has too many words",
    r"^goal_met needs goal_id",  # a search's words, and a pair of parameters
    r"^trackers\.\d+\.query (has no word to search for|must name a word to find|has too many words)",
    r"^trackers must not repeat a name",  # a tracker's query is a search's words; names unique by one field
    # a scorecard's form: its sections are the Scorecard resource's (the document describes them in words: their
    # weights add up to 100, a source fits its question's type...), and a review answers the form of the recording
    r"^sections", r"^scorecard_id names (no scorecard of this recording|a form that was deleted)",
    r"^answers\.\d+\.(question_id names no question of the form|question_id must not repeat|answer must be)",
    r"^transcription\.model .* is not a transcription model of this site",  # the site's configuration
]))


@schemathesis.check
def positive_data_acceptance_of_the_shape(ctx, response, case):
    if response.status_code == 422 and all(STATEFUL.search(e) for e in response.json().get("errors", [])):
        return None
    return positive_data_acceptance(ctx, response, case)


@schemathesis.hook
def flatmap_case(context, case):
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if not (SEEDED and positive and case.method != "DELETE" and case.operation.path.startswith(RECORDING_PATH)):
        return st.just(case)

    def naming(ref: str):
        case.path_parameters = {**case.path_parameters, "id": ref}
        return case

    return st.sampled_from([case.path_parameters["id"], *SEEDED]).map(naming)
