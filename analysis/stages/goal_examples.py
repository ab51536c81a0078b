"""How the speech acts that goals often ask for sound when said: example utterances matched beside the goal's text.

A goal's description is an instruction ("The agent greets the caller and introduces themselves"); the call is
speech ("Thank you for calling, my name is Anna, how can I help you?"). For acts that are said in set phrases
the text embedder puts the instruction far from the speech (0.29 for that pair) and an example of the act close
(0.5-1.0). A goal whose name or description names one of these acts (its ``cue``) is also matched against the
act's examples, with its own threshold (goals.EXAMPLE_THRESHOLD): utterances resemble each other more than an
utterance resembles an instruction.

An act that says who the speaker is (an introduction) asks for a name: a goal that names it is met only by words that
give one (goals.py, `needs_name`); `says_own_name` reads how a name is given in languages the redaction's name rules
(English) do not.

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
    gives_name: bool = False  # the act says who the speaker is: only words that give a name are this act


ACTS = (
    Act("a greeting", re.compile(r"\b(?:greet\w*|hello|welcom\w*)\b", re.I), (
        "Hello?",
        "Hi, good morning.",
        "Hello, thanks for calling, how can I help you?",
        "Good afternoon, you're through to customer support, how may I help?",
    )),
    Act("an introduction", re.compile(r"\b(?:introduc\w*|(?:own|their|his|her|your) name|gives? (?:a )?name|"
                                      r"names? (?:them|him|her|your)sel\w*)\b", re.I), (
        "My name is Laura.",
        "This is Peter speaking.",
        "Hi, it's Sam from the service desk.",
        "Thanks for calling, this is Kate, what can I do for you?",
    ), gives_name=True),
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


def acts_named(name: str, description: str) -> list[Act]:
    """The acts a goal's name or description names, in the order of ACTS."""
    text = f"{name.replace('_', ' ')} {description}"
    return [act for act in ACTS if act.cue.search(text)]


def examples(name: str, description: str) -> list[tuple[Act, str]]:
    """(act, example) for each act the goal's name or description names, in the order of ACTS."""
    return [(act, example) for act in acts_named(name, description) for example in act.examples]


# How a speaker gives their own name in German, French, Spanish, Italian, Portuguese and Dutch: the cue, then a
# capitalised word (the name). Cues that also start a sentence about a thing ("ich bin Kunde": German capitalises
# nouns) are left out.
_OWN_NAME = re.compile(
    r"\b(?:mein name ist|hier spricht|je m'appelle|mon nom est|c'est|me llamo|mi nombre es|le habla|le atiende|"
    r"mi chiamo|il mio nome è|(?:o )?meu nome é|chamo-me|mijn naam is|u spreekt met)\s+([^\W\d_][\w'-]*)", re.I)
_AT_THE_PHONE = re.compile(r"\b([^\W\d_][\w'-]*)\s+(?:am apparat|à l'appareil|al habla|al telefono)\b", re.I)


def says_own_name(text: str) -> bool:
    """Whether text gives a speaker's name by one of the cues of the languages above ("Mein Name ist Anna",
    "Marie à l'appareil"); English is the redaction's name rules' (goals.named_segments)."""
    return any(m.group(1)[0].isupper() for pattern in (_OWN_NAME, _AT_THE_PHONE) for m in pattern.finditer(text))


__all__ = ["ACTS", "Act", "acts_named", "examples", "says_own_name"]
