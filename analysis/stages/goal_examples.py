"""How the speech acts that goals often ask for sound when said: example utterances matched beside the goal's text.

A goal's description is an instruction ("The agent greets the caller and introduces themselves"); the call is
speech ("Thank you for calling, my name is Anna, how can I help you?"). For acts that are said in set phrases
the text embedder puts the instruction far from the speech (0.29 for that pair) and an example of the act close
(0.5-1.0). A goal whose name or description names one of these acts (its ``cue``) is also matched against the
act's examples, with its own threshold (goals.EXAMPLE_THRESHOLD): utterances resemble each other more than an
utterance resembles an instruction.

The examples are written here, not taken from any call the thresholds were fitted or checked on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Act:
    name: str  # as an explanation names it, with its article: "a greeting"
    cue: re.Pattern  # words of a goal's name or description that ask for this act
    examples: tuple[str, ...]
    # Words an utterance of the act must contain: the embedder misses the one word that makes it this act
    # ("How can I help you today?" is 0.77 to "Can I help you with anything else today?").
    requires: re.Pattern | None = None


ACTS = (
    Act("a greeting", re.compile(r"\b(?:greet\w*|hello|welcom\w*)\b", re.I), (
        "Hello?",
        "Hi, good morning.",
        "Hello, thanks for calling, how can I help you?",
        "Good afternoon, you're through to customer support, how may I help?",
    )),
    Act("an introduction", re.compile(r"\b(?:introduc\w*|(?:own|their|his|her) name|gives? (?:a )?name)\b", re.I), (
        "My name is Laura.",
        "This is Peter speaking.",
        "Hi, it's Sam from the service desk.",
        "Thanks for calling, this is Kate, what can I do for you?",
    )),
    Act("an offer of further help", re.compile(r"\b(?:anything else|something else|further help|other questions?)\b",
                                            re.I), (
        "Is there anything else I can do for you?",
        "Can I help you with anything else today?",
        "Do you have any other questions?",
    ), re.compile(r"\b(?:else|other|further|more)\b", re.I)),
    Act("a closing", re.compile(r"\b(?:clos(?:es?|ing)|goodbyes?|bye|farewell|ends? the call|end of the call)\b",
                              re.I), (
        "Thanks for calling, goodbye.",
        "Have a nice day, bye.",
        "Take care, bye bye.",
    )),
    Act("an apology", re.compile(r"\b(?:apologi[sz]\w*|sorry)\b", re.I), (
        "I'm so sorry about that.",
        "I apologise for the trouble.",
    )),
    Act("thanks", re.compile(r"\bthank\w*\b", re.I), (
        "Thank you very much.",
        "Thanks a lot for your help.",
    )),
)


def examples(name: str, description: str) -> list[tuple[Act, str]]:
    """(act, example) for each act the goal's name or description names, in the order of ACTS."""
    text = f"{name.replace('_', ' ')} {description}"
    return [(act, example) for act in ACTS if act.cue.search(text) for example in act.examples]


__all__ = ["ACTS", "Act", "examples"]
