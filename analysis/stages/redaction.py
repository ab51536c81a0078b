"""What to redact in a transcript: card numbers and personal data, found word by word so that both the text and the
audio can be redacted. Detection only; nothing here changes a transcript.

`find_spans(segments, entities)` gives the `RedactedSpan`s (segment index, first and last word inclusive, entity,
times) of each requested `EntityType`. Words are a segment's `words`, or its text split on spaces where it has none.
Values are read from their spoken forms (spoken.py) and validated where they can be (Luhn and IIN, IBAN mod 97, SSN
ranges, libphonenumber); what has no check needs a cue said just before it ("account number", "date of birth").
Pure and deterministic; `region` reads phone numbers and numeric dates. The rules: docs/analysis.md (Redaction).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from difflib import SequenceMatcher
from enum import StrEnum
from functools import lru_cache
from typing import Any

import numpy as np
import phonenumbers
from stdnum import iban, luhn
from stdnum.us import rtn, ssn

from callscope.analysis.result import ExtractedValue, RedactionSummary, TranscriptSegment
from callscope.analysis.stages.evidence import find_words, tokens
from callscope.analysis.stages.request_examples import OTHER_REQUESTS, REQUEST_EXAMPLES
from callscope.analysis.stages.spoken import (
    MONTHS,
    ORDINALS,
    TEENS,
    TENS,
    UNITS,
    DigitRun,
    Lexeme,
    date_mentions,
    digit_runs,
    digit_value,
    email_mentions,
    lex,
)
from callscope.analysis.stages.timing import unheard
from callscope.analysis.types import SpeechRegion, language_code
from callscope.resources.kinds import ANSWER_SECONDS_DEFAULT


class EntityType(StrEnum):
    PAYMENT_CARD = "payment_card"
    BANK_ACCOUNT = "bank_account"
    NATIONAL_ID = "national_id"
    DATE_OF_BIRTH = "date_of_birth"
    EMAIL = "email"
    PHONE_NUMBER = "phone_number"
    PERSON_NAME = "person_name"
    ADDRESS = "address"


ENTITY_TYPES: tuple[EntityType, ...] = tuple(EntityType)
# What found a span's words (the result's redaction.found_by): the values the rules read in the words, and strict
# mode's answers to a request (found by its words, or by its meaning), runs of digits, turns while a card or bank
# details are given, e-mails spelled or said around a mail provider, and low-confidence widening.
FOUND_BY = ("words", "request", "request_meaning", "digit_run", "value_window", "spelled", "email_shape",
            "low_confidence")


@dataclass(frozen=True, order=True)
class RedactedSpan:
    """Words first_word..last_word (inclusive) of segments[segment] say an entity; start_ms..end_ms is their audio."""

    segment: int
    first_word: int
    last_word: int
    entity: EntityType
    start_ms: int
    end_ms: int
    found_by: tuple[str, ...] = field(default=("words",), compare=False)  # of FOUND_BY, what found its words


CUE_WINDOW = 20  # words before a value where its cue may be: an agent's question and the start of the answer
JOIN_GAP_MS = 10_000  # a speaker's next segment continues a value said across the two within this gap
BACKCHANNEL_WORDS = 4  # the other speaker may say this many words in between ("mm-hmm", "yes go on")

# Cue phrases, as tokens (evidence.tokens), and what the value said after them is. Numbers take the kind of the
# nearest cue before them; "other" are numbers that are not personal data (an order number, a price).
_NUMBER_CUES = {
    "card": """card | card number | credit card | debit card | long number | visa | mastercard | amex |
        american express | name on the card | number on the card""",
    "last4": "card ending | ending | ending in | ends in | last four | last four digits | last 4",
    "cvv": """security code | cvv | cvc | cv2 | three digit code | digits on the back | back of the card""",
    "expiry": """expiry | expiry date | expiration | expiration date | expires | valid until | valid through |
        valid thru | end date""",
    "account": """account | account number | bank account | acct | checking account | savings account""",
    "iban": "iban | i b a n",  # only a whole IBAN passing mod 97 (letters and digits, below) is one
    "sort": "sort code",
    "routing": "routing | routing number | aba | transit number",
    "ssn": "social security | social security number | social | ssn | s s n",
    "id": """national insurance | national insurance number | ni number | n i number | id number |
        identification number | passport | passport number | driver's license | drivers license |
        driving licence | license number | licence number | national id | tax id""",
    "phone": """phone | phone number | mobile | cell | cell phone | telephone | landline | call you back |
        call back | callback | reach you | contact number | number to call | best number""",
    "zip": "zip | zip code | postcode | post code | postal code",
    "other": """order | order number | reference | ref | reference number | invoice | ticket | tracking |
        confirmation | case | case number | claim | booking | model | serial | extension | ext | room | flight |
        policy | item | items | sku | product | part number | member | membership | customer number | price |
        total | cost | costs | balance | pay | paid | charge | charged | refund | quantity | pin""",
}
# "birth" alone: a recogniser that garbles "date of" ("your native birth?") still says what is asked for
# "your date": a person's date is their birth date ("and your date number," for "and your date of birth?")
_DOB_CUES = "date of birth | birth date | birthdate | birth | born | birthday | dob | d o b | your date"
_ADDRESS_CUES = """address | live at | i live | living at | lives at | postcode | post code | zip | zip code |
    postal code | deliver to | delivered to | ship to | send it to | mail it to | first line"""


def _phrases(spec: str) -> list[tuple[str, ...]]:
    return [tuple(tokens(p)) for p in spec.split("|") if tokens(p)]


_CUE_KIND = {phrase: kind for kind, spec in _NUMBER_CUES.items() for phrase in _phrases(spec)}
_CUE_KIND |= {phrase: "dob" for phrase in _phrases(_DOB_CUES)}
_ADDRESS_PHRASES = set(_phrases(_ADDRESS_CUES))
_LONGEST_CUE = max(len(p) for p in (*_CUE_KIND, *_ADDRESS_PHRASES))

# A number said with these around it is an amount, a time or a count, not an identifier.
_CURRENCY = "$£€¥"
_UNIT_AFTER = set("""dollars dollar bucks pounds pound quid euros euro cents cent pence p percent per am pm
    o'clock minutes minute hours hour days day weeks week months month years year times items pieces people
    miles kilometers kilos pounds kg lbs gigs gb mb""".split())
# ... or with a currency word before it: ASR writes "$82.40" said as "eighty two dollars forty" as "dollar 82.4"
_CURRENCY_WORD = re.compile(r"\b(?:dollars?|pounds?|euros?|quid|bucks)\W*$", re.IGNORECASE)


# --- the call's words -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Word:
    segment: int
    index: int  # in the segment's words
    text: str
    start_ms: int
    end_ms: int
    token: int  # index of its first token in the call's tokens


def _segment_words(segment: TranscriptSegment) -> list[tuple[str, int, int]]:
    if segment.words:
        return [(w.text.strip(), w.start_ms, w.end_ms) for w in segment.words]
    # no word timings: the text's words share the segment's time evenly (the audio is cut a little wide)
    parts = segment.text.split()
    span = segment.end_ms - segment.start_ms
    return [(p, segment.start_ms + span * i // len(parts), segment.start_ms + span * (i + 1) // len(parts))
            for i, p in enumerate(parts)]


@dataclass
class _Thread:
    """One speaker's words as one text (each character's word in `owner`, -1 between words): segments that follow
    each other are joined by a comma, so a number said across them reads as one; others by a break."""

    speaker: str
    text: str
    owner: list[int]


class _Call:
    def __init__(self, segments: Sequence[TranscriptSegment]):
        self.segments = segments
        self.words: list[_Word] = []
        self.tokens: list[str] = []
        self.token_word: list[int] = []
        self.by_segment: list[list[int]] = []
        for si, segment in enumerate(segments):
            self.by_segment.append([])
            for wi, (text, start, end) in enumerate(_segment_words(segment)):
                self.by_segment[-1].append(len(self.words))
                self.words.append(_Word(si, wi, text, start, end, len(self.tokens)))
                for token in tokens(text):
                    self.tokens.append(token)
                    self.token_word.append(len(self.words) - 1)
        self.cues: list[str | None] = [None] * len(self.tokens)  # the kind of the cue that ends at each token
        self.address_cue = [False] * len(self.tokens)
        for t in range(len(self.tokens)):
            for n in range(min(_LONGEST_CUE, t + 1), 0, -1):
                phrase = tuple(self.tokens[t - n + 1:t + 1])
                if self.cues[t] is None and phrase in _CUE_KIND:
                    self.cues[t] = _CUE_KIND[phrase]
                self.address_cue[t] = self.address_cue[t] or phrase in _ADDRESS_PHRASES
        self.threads = self._threads()

    def _threads(self) -> list[_Thread]:
        out: dict[str, _Thread] = {}
        last: dict[str, int] = {}
        self.word_at: dict[int, tuple[_Thread, int, int]] = {}  # each word's characters in its speaker's thread
        for si, segment in enumerate(self.segments):
            thread = out.setdefault(segment.speaker, _Thread(segment.speaker, "", []))
            if thread.text:
                joined = self._continues(last[segment.speaker], si)
                sep = ", " if joined else " | "
                thread.text += sep
                thread.owner += [-1] * len(sep)
            last[segment.speaker] = si
            for k, w in enumerate(self.by_segment[si]):
                if k and self.words[w].text:
                    thread.text += " "
                    thread.owner.append(-1)
                self.word_at[w] = (thread, len(thread.text), len(thread.text) + len(self.words[w].text))
                thread.text += self.words[w].text
                thread.owner += [w] * len(self.words[w].text)
        return list(out.values())

    def _continues(self, before: int, after: int) -> bool:
        """Whether segment after continues what its speaker said in segment before: soon after, with only a short
        acknowledgement by another speaker in between ("mm-hmm", "okay"), not a new question ("and the expiry?")."""
        if self.segments[after].start_ms - self.segments[before].end_ms > JOIN_GAP_MS:
            return False
        for k in range(before + 1, after):
            words = self.by_segment[k]
            if len(words) > BACKCHANNEL_WORDS:
                return False
            first = self.words[words[0]].token if words else 0
            last = self.words[words[-1]].token + len(tokens(self.words[words[-1]].text)) if words else 0
            if any(self.cues[first:last]) or any(self.address_cue[first:last]):
                return False
        return True

    def nearest_cue(self, token: int, window: int = CUE_WINDOW) -> str | None:
        """The kind of the nearest number (or birth date) cue ending before token, within window tokens."""
        for t in range(token - 1, max(-1, token - 1 - window), -1):
            if self.cues[t] is not None:
                return self.cues[t]
        return None

    def answers(self, token: int, kind: str) -> bool:
        """Whether what is said at token answers a cue of kind: said after it in its segment, in the next segment,
        or in the one after a short acknowledgement without digits ("a date" after "date of birth?" is the birth
        date; one said after the answer is not)."""
        said = self.words[self.token_word[token]].segment if token < len(self.tokens) else len(self.segments)
        for t in range(token - 1, max(-1, token - 1 - CUE_WINDOW), -1):
            if self.cues[t] != kind:
                continue
            cue = self.words[self.token_word[t]].segment
            between = [self.words[w] for k in range(cue + 1, said) for w in self.by_segment[k]]
            if said - cue <= 1 or (said - cue == 2 and len(between) <= BACKCHANNEL_WORDS
                                   and not any(c.isdigit() for w in between for c in w.text)):
                return True
        return False

    def cued(self, token: int, kind: str, window: int = CUE_WINDOW) -> bool:
        """Whether a cue of kind ends within window tokens before token."""
        lo = max(0, token - window)
        if kind == "address":
            return any(self.address_cue[lo:token])
        return kind in self.cues[lo:token]


# --- what was found -------------------------------------------------------------------------------------


class _Found:
    """Words found per entity, and the characters of each thread already taken (a value is one entity)."""

    def __init__(self, call: _Call):
        self.call = call
        self.words: dict[EntityType, set[int]] = {e: set() for e in EntityType}
        self.taken: dict[str, list[bool]] = {t.speaker: [False] * len(t.text) for t in call.threads}
        self.values: list[tuple[EntityType, str]] = []  # digits found, for their read-backs
        self.found_by: dict[int, str] = {}  # word -> the first of FOUND_BY that found it

    def free(self, thread: _Thread, start: int, end: int) -> bool:
        return not any(self.taken[thread.speaker][start:end])

    def add(self, thread: _Thread, start: int, end: int, entity: EntityType, value: str = "") -> None:
        taken = self.taken[thread.speaker]
        for c in range(start, end):
            taken[c] = True
            if thread.owner[c] >= 0:
                self.words[entity].add(thread.owner[c])
                self.found_by.setdefault(thread.owner[c], "words")
        if value:
            self.values.append((entity, value))

    def block(self, thread: _Thread, start: int, end: int) -> None:
        self.taken[thread.speaker][start:end] = [True] * (end - start)

    def add_words(self, words: Iterable[int], entity: EntityType, by: str = "words") -> None:
        words = list(words)
        self.words[entity].update(words)
        for w in words:
            self.found_by.setdefault(w, by)

    def spans(self, entities: Iterable[EntityType]) -> list[RedactedSpan]:
        out = []
        for entity in entities:
            run: list[_Word] = []
            ids: list[int] = []  # run's word numbers
            for w in [*sorted(self.words[entity]), -1]:
                word = self.call.words[w] if w >= 0 else None
                if run and (word is None or word.segment != run[-1].segment or word.index != run[-1].index + 1):
                    found_by = {self.found_by.get(v, "words") for v in ids}
                    out.append(RedactedSpan(run[0].segment, run[0].index, run[-1].index, entity,
                                            run[0].start_ms, run[-1].end_ms,
                                            tuple(b for b in FOUND_BY if b in found_by)))
                    run, ids = [], []
                if word is not None:
                    run.append(word)
                    ids.append(w)
        return sorted(out)


def _token_at(call: _Call, thread: _Thread, char: int) -> int:
    """The call's token index of the word at (or first after) char of thread."""
    for c in range(char, len(thread.owner)):
        if thread.owner[c] >= 0:
            return call.words[thread.owner[c]].token
    return len(call.tokens)


# --- digits ---------------------------------------------------------------------------------------------


def _pieces(text: str, run: DigitRun) -> list[tuple[str, int, int]]:
    """The digits of run, piece by piece (one per spoken or written number), with where each is in text."""
    lexemes = lex(text[run.start:run.end])
    out, i = [], 0
    while i < len(lexemes):
        value = digit_value(lexemes, i)
        if value is None:
            i += 1
            continue
        out.append((value[0], run.start + lexemes[i].start, run.start + lexemes[i + value[1] - 1].end))
        i += value[1]
    return out


# Card brands: IIN prefix ranges (as many digits as the bounds have) and the lengths their numbers have.
_BRANDS: list[tuple[tuple[int, int], tuple[int, ...]]] = [
    ((4, 4), (13, 16, 19)),  # Visa
    ((51, 55), (16,)), ((2221, 2720), (16,)),  # Mastercard
    ((34, 34), (15,)), ((37, 37), (15,)),  # American Express
    ((6011, 6011), (16, 17, 18, 19)), ((644, 649), (16, 17, 18, 19)), ((65, 65), (16, 17, 18, 19)),  # Discover
    ((3528, 3589), (16, 17, 18, 19)),  # JCB
    ((300, 305), (14, 15, 16, 17, 18, 19)), ((36, 36), (14, 15, 16, 17, 18, 19)),  # Diners Club
    ((38, 39), (16, 17, 18, 19)),
    ((62, 62), (16, 17, 18, 19)),  # UnionPay
    ((2200, 2204), (16, 17, 18, 19)),  # Mir
    ((50, 50), (13, 14, 15, 16, 17, 18, 19)), ((56, 58), (13, 14, 15, 16, 17, 18, 19)),  # Maestro
    ((639, 639), (13, 14, 15, 16, 17, 18, 19)), ((67, 67), (13, 14, 15, 16, 17, 18, 19)),
]


def is_card_number(digits: str) -> bool:
    """Whether digits are a payment card number: a known brand's prefix and length, and the Luhn check."""
    known = any(lo <= int(digits[:len(str(lo))]) <= hi and len(digits) in lengths
                for (lo, hi), lengths in _BRANDS)
    return known and luhn.is_valid(digits)


def _windows(bounds: list[int], lo: int, hi: int) -> Iterable[tuple[int, int]]:
    """Digit windows [a, b) starting and ending at piece bounds, lo..hi digits long: earliest start, longest first."""
    for i, a in enumerate(bounds):
        for b in reversed(bounds[i + 1:]):
            if lo <= b - a <= hi:
                yield a, b


def _valid_date(parts: Sequence[str], day_first: bool) -> bool:
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or len(parts[2]) not in (2, 4):
        return False
    a, b, year = int(parts[0]), int(parts[1]), int(parts[2])
    year += 0 if len(parts[2]) == 4 else 1900 if year > 30 else 2000
    month, day = (b, a) if day_first else (a, b)
    try:
        date(year, month, day)
    except ValueError:
        return False
    return 1900 <= year <= 2099


class _Digits:
    """One thread's digit runs, classified."""

    def __init__(self, call: _Call, found: _Found, thread: _Thread, region: str):
        self.call, self.found, self.thread, self.region = call, found, thread, region

    def runs(self) -> list[tuple[DigitRun, list[tuple[str, int, int]]]]:
        text = self.thread.text
        out = []
        for run in digit_runs(text):
            pieces = [p for p in _pieces(text, run) if self.found.free(self.thread, p[1], p[2])]
            if pieces and not self.amount(run):
                out.append((run, pieces))
        return out

    def amount(self, run: DigitRun) -> bool:
        text = self.thread.text
        before = text[max(0, run.start - 2):run.start]
        after = tokens(text[run.end:run.end + 16])
        currency_word = _CURRENCY_WORD.search(text[max(0, run.start - 12):run.start]) is not None
        return any(c in before for c in _CURRENCY) or bool(after and after[0] in _UNIT_AFTER) or \
            text[run.end:run.end + 1] in (":", "%") or currency_word or self.clock_time(run)

    def clock_time(self, run: DigitRun) -> bool:
        """ "at 1015": a time whose colon ASR left out (three or four digits that read as one, after "at")."""
        digits = run.digits
        at = re.search(r"\bat\W*$", self.thread.text[max(0, run.start - 5):run.start], re.IGNORECASE)
        return at is not None and len(digits) in (3, 4) and int(digits[:-2]) <= 23 and int(digits[-2:]) <= 59

    def take(self, pieces: list[tuple[str, int, int]], a: int, b: int, entity: EntityType) -> None:
        """Pieces covering digits a..b of the run found as entity."""
        at, chosen = 0, []
        for piece in pieces:
            if at >= a and at + len(piece[0]) <= b:
                chosen.append(piece)
            at += len(piece[0])
        if chosen:
            digits = "".join(p[0] for p in chosen)
            self.found.add(self.thread, chosen[0][1], chosen[-1][2], entity, digits)

    def classify(self) -> None:
        for run, pieces in self.runs():
            digits = "".join(p[0] for p in pieces)
            bounds = [0]
            for p in pieces:
                bounds.append(bounds[-1] + len(p[0]))
            token = _token_at(self.call, self.thread, pieces[0][1])
            cue = self.call.nearest_cue(token)
            if self.call.answers(token, "dob") and self.birth_date(run, digits):
                self.take(pieces, 0, len(digits), EntityType.DATE_OF_BIRTH)
                continue
            # a run longer than a card (a tracking number) holds one only when a card was asked for
            card_cued = any(self.call.cued(token, kind) for kind in ("card", "cvv", "expiry"))
            if cue != "other" and (len(digits) <= 19 or card_cued):
                cards: list[tuple[int, int]] = []
                for a, b in _windows(bounds, 13, 19):
                    if (not cards or a >= cards[-1][1]) and is_card_number(digits[a:b]):
                        cards.append((a, b))
                if cards:
                    for a, b in cards:
                        self.take(pieces, a, b, EntityType.PAYMENT_CARD)
                    if card_cued:  # the run's other digits are heard around the card's: none may be left
                        self.take(pieces, 0, cards[0][0], EntityType.PAYMENT_CARD)
                        self.take(pieces, cards[-1][1], len(digits), EntityType.PAYMENT_CARD)
                    elif len(digits) - cards[-1][1] <= 4:  # the expiry or the security code, said right after
                        self.take(pieces, cards[-1][1], len(digits), EntityType.PAYMENT_CARD)
                    continue
            entity = self.by_cue(cue, run, digits, token)
            if entity is not None:
                self.take(pieces, 0, len(digits), entity)
            elif cue not in ("other", "zip", "iban"):
                self.phone(run, pieces, digits)

    def by_cue(self, cue: str | None, run: DigitRun, digits: str, token: int) -> EntityType | None:
        n = len(digits)
        if (cue == "cvv" and n in (3, 4)) or (cue == "expiry" and 3 <= n <= 6):
            return EntityType.PAYMENT_CARD
        if cue == "last4" and n == 4:  # "the card ending 5566", "the account ending in 1234"
            account = self.call.cued(token, "account") and not self.call.cued(token, "card")
            return EntityType.BANK_ACCOUNT if account else EntityType.PAYMENT_CARD
        if (cue == "account" and 6 <= n <= 17) or (cue == "sort" and n == 6) or \
                (cue == "routing" and n == 9 and rtn.is_valid(digits)):
            return EntityType.BANK_ACCOUNT
        last_four = n == 4 and "last" in self.call.tokens[max(0, token - CUE_WINDOW):token]
        if (cue == "ssn" and ((n == 9 and ssn.is_valid(digits)) or last_four)) or (cue == "id" and 5 <= n <= 12):
            return EntityType.NATIONAL_ID
        # an SSN said in its groups needs no cue: 3-2-4 digits in the valid ranges
        if cue != "other" and [len(g) for g in run.groups] == [3, 2, 4] and ssn.is_valid(digits):
            return EntityType.NATIONAL_ID
        if cue == "zip" and n in (5, 9):
            return EntityType.ADDRESS
        return None

    def birth_date(self, run: DigitRun, digits: str) -> bool:
        groups = list(run.groups) if len(run.groups) == 3 else [digits[:2], digits[2:4], digits[4:]] \
            if len(digits) in (6, 8) else []
        day_first = self.region.upper() not in ("US", "CA")
        return _valid_date(groups, day_first) or _valid_date(groups, not day_first)

    def phone(self, run: DigitRun, pieces: list[tuple[str, int, int]], digits: str) -> None:
        if len(digits) < 7:
            return
        try:
            whole = phonenumbers.parse(("+" if run.plus else "") + digits, self.region)
            if phonenumbers.is_valid_number(whole):
                self.take(pieces, 0, len(digits), EntityType.PHONE_NUMBER)
                plus = re.search(r"(?:\bplus|\+)\W*$", self.thread.text[:run.start], re.IGNORECASE)
                if run.plus and plus:  # "plus four four ...": the "plus" too
                    self.found.add(self.thread, plus.start(), run.start, EntityType.PHONE_NUMBER)
                return
        except phonenumbers.NumberParseException:
            pass
        # more digits than one number: valid numbers inside, on piece bounds
        bounds = [0]
        for p in pieces:
            bounds.append(bounds[-1] + len(p[0]))
        taken_to = 0
        for a, b in _windows(bounds, 7, 15):
            if a < taken_to:
                continue
            try:
                number = phonenumbers.parse(digits[a:b], self.region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(number):
                self.take(pieces, a, b, EntityType.PHONE_NUMBER)
                taken_to = b


# --- letters and digits: IBAN, national insurance numbers, passports, postcodes --------------------------

_NATO = {w: w[0].upper() for w in """alpha alfa bravo charlie delta echo foxtrot golf hotel india juliet juliett
    kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey whisky xray yankee
    zulu""".split()}
_ALNUM_LEX = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_ALNUM_GAP = re.compile(r"^[\s,.\-–—/()]*$")
_NINO = re.compile(r"^(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]$")
_POSTCODE = re.compile(r"^[A-PR-UWYZ][A-HK-Y]?\d[A-Z\d]?\d[ABD-HJLNP-UW-Z]{2}$")


def _alnum_pieces(text: str) -> list[list[tuple[str, int, int]]]:
    """Runs of letters and digits said one after another ("G B eight two W E S T", "QQ 12 34 56 C"): each piece's
    characters (upper case) and where it is in text."""
    lexemes = [Lexeme(m.group(), m.start(), m.end()) for m in _ALNUM_LEX.finditer(text)]
    lower = [Lexeme(x.word.lower(), x.start, x.end) for x in lexemes]
    runs: list[list[tuple[str, int, int]]] = [[]]
    i = 0
    while i < len(lexemes):
        word, n = lexemes[i].word, 1
        if len(word) == 1 and word.isalpha() and word not in ("a", "i"):
            chars = word.upper()
        elif word.lower() in _NATO:
            chars = _NATO[word.lower()]
        elif (value := digit_value(lower, i)) is not None:
            chars, n = value
        elif re.fullmatch(r"[A-Z0-9]{2,}", word) and not word.isdigit():
            chars = word
        else:
            chars = ""
        gap = text[runs[-1][-1][2]:lexemes[i].start] if runs[-1] else ""
        if not chars or (runs[-1] and not _ALNUM_GAP.match(gap)):
            runs.append([])
        if chars:
            runs[-1].append((chars, lexemes[i].start, lexemes[i + n - 1].end))
        i += n
    return [r for r in runs if r]


def _alnum(call: _Call, found: _Found, thread: _Thread) -> None:
    for pieces in _alnum_pieces(thread.text):
        pieces = [p for p in pieces if found.free(thread, p[1], p[2])]
        chars = "".join(p[0] for p in pieces)
        if not any(c.isalpha() for c in chars):
            continue  # digits alone are classified as digits
        bounds = [0]
        for p in pieces:
            bounds.append(bounds[-1] + len(p[0]))
        token = _token_at(call, thread, pieces[0][1])
        done_to = 0
        for a, b in _windows(bounds, 5, 34):
            if a < done_to:
                continue
            value = chars[a:b]
            entity = None
            if b - a >= 15 and value[:2].isalpha() and value[2:4].isdigit() and iban.is_valid(value):
                entity = EntityType.BANK_ACCOUNT
            elif _NINO.match(value) or (
                    6 <= b - a <= 12 and sum(c.isdigit() for c in value) >= 4 and call.nearest_cue(token) == "id"):
                entity = EntityType.NATIONAL_ID
            elif _POSTCODE.match(value) and call.cued(token, "address", CUE_WINDOW + 10):
                entity = EntityType.ADDRESS
            if entity is not None:
                chosen = [p for p, lo in zip(pieces, bounds, strict=False) if a <= lo < b]
                found.add(thread, chosen[0][1], chosen[-1][2], entity, value)
                done_to = b


# --- dates of birth, e-mail addresses ---------------------------------------------------------------------

_MONTH_OR_NUMERIC = re.compile(r"\d{1,2}/\d{1,2}|\d{4}-\d{1,2}-\d{1,2}|\b(?:" + "|".join(MONTHS) + r")\b", re.I)
_YEARLESS_ANCHOR = date(2000, 1, 1)  # dates said without a year read in a leap year: "February 29th" stays one
OLD_DATE_YEAR = 2025  # the year a call without a reference date is taken to be in


def _pseudo_segment(thread: _Thread) -> TranscriptSegment:
    return TranscriptSegment(id=-1, speaker=thread.speaker, channel=0, start_ms=0, end_ms=0, text=thread.text)


def _dates_of_birth(call: _Call, found: _Found, thread: _Thread, region: str, reference: date | None) -> None:
    said = _pseudo_segment(thread)
    with_year = {(m.start, m.end) for m in date_mentions(said, None, region)}
    for m in date_mentions(said, _YEARLESS_ANCHOR, region):
        if not _MONTH_OR_NUMERIC.search(thread.text[m.start:m.end]) or not found.free(thread, m.start, m.end):
            continue
        if (m.start, m.end) in with_year and (m.value.year < 1900 or (reference is not None and m.value > reference)):
            found.block(thread, m.start, m.end)  # a birth date is in the past: this is another date
            continue
        # a whole date decades back is a birth date even when ASR lost its cue ("I was born" -> "won one more")
        old = (m.start, m.end) in with_year and m.value.year <= (reference.year if reference else OLD_DATE_YEAR) - 16
        if call.answers(_token_at(call, thread, m.start), "dob") or (old and "other" not in (
                call.nearest_cue(_token_at(call, thread, m.start)),)):
            found.add(thread, m.start, m.end, EntityType.DATE_OF_BIRTH)
        else:
            found.block(thread, m.start, m.end)  # another date: its digits are no card, account or phone


def _emails(found: _Found, thread: _Thread) -> None:
    for m in email_mentions(_pseudo_segment(thread)):
        if found.free(thread, m.start, m.end):
            found.add(thread, m.start, m.end, EntityType.EMAIL)


# --- read-backs -----------------------------------------------------------------------------------------


READ_BACK_LIKENESS = 0.75  # difflib ratio: 16 digits with two heard differently still match (0.875)


def _read_backs(call: _Call, found: _Found) -> None:
    """Digits found once are redacted wherever they are said again: the agent reading a card back, its last
    four, or a part of it repeated while it is taken down."""
    values = [(e, v) for e, v in found.values if len(v) >= 4 and v.isdigit()]
    for thread in call.threads:
        said = _Digits(call, found, thread, "")
        for _, pieces in said.runs():
            digits = "".join(p[0] for p in pieces)
            if len(digits) < 4:
                continue
            for entity, value in values:
                partial = entity in (EntityType.PAYMENT_CARD, EntityType.BANK_ACCOUNT, EntityType.NATIONAL_ID)
                # a part: the last four, or whole groups of four from the start ("4532 1122?" "yes")
                chunk = value.find(digits) % 4 == 0 if digits in value else False
                # ASR hears a digit or two of the read-back (or of the value) differently: most of it is enough
                close = partial and len(value) >= 8 and len(digits) >= 6 and \
                    SequenceMatcher(None, digits, value, autojunk=False).ratio() >= READ_BACK_LIKENESS
                if digits == value or close or (partial and len(value) >= 8 and (digits == value[-4:] or chunk)):
                    found.add(thread, pieces[0][1], pieces[-1][2], entity)
                    break


# --- answers: what is said in reply to a question, read in the question's context -------------------------
# ASR writes digits heard on a phone line in many ways ("4-9-2-6", "3 ,786", "I1821993", "Niro-181", "60, 40")
# and mishears some: a card then fails Luhn or loses a digit, a date its month, an e-mail its "at". A value said
# in answer to a question that asked for it (or after its cue in the speaker's own words) is taken whatever its
# checks say: inside a context that asked for sensitive data, when in doubt, redact.

ASK_TAIL = 12  # tokens: a question names what it asks for near its end ("Can I take the long number on the card?")
DIGIT_GAP = 2  # misheard words between two digits of one value ("7-2, or 4-1-8", "Niro-181, I-9-0-8")
ANSWER_GAP = 4  # in an answer to the question that asked for it, more ("41, I'm, I'm, I'm, I'm, 26, 91")
EMAIL_WORDS = 8  # words of an e-mail heard before its domain ("mark.gencer.outlook.com", "Marcus Mel's access ...")
ADDRESS_WORDS = 14  # words of an address after its first number (street, town, state, postcode)

_KIND_ENTITY = {"card": EntityType.PAYMENT_CARD, "last4": EntityType.PAYMENT_CARD, "cvv": EntityType.PAYMENT_CARD,
                "expiry": EntityType.PAYMENT_CARD, "account": EntityType.BANK_ACCOUNT,
                "iban": EntityType.BANK_ACCOUNT, "sort": EntityType.BANK_ACCOUNT,
                "routing": EntityType.BANK_ACCOUNT, "ssn": EntityType.NATIONAL_ID, "id": EntityType.NATIONAL_ID,
                "phone": EntityType.PHONE_NUMBER, "zip": EntityType.ADDRESS, "address": EntityType.ADDRESS,
                "dob": EntityType.DATE_OF_BIRTH}
# digits heard that make a value: a security code or an expiry is short; anything else at least four (a piece of
# a card read out in groups is a card)
_MIN_DIGITS = {"cvv": 2, "expiry": 2, "dob": 2, "zip": 3, "address": 1, "account": 6, "sort": 6, "routing": 6,
               "iban": 6}
# a value volunteered after its cue, not asked for, needs more ("the card is renewed until 2027" is no card): a
# card's pieces together at least twelve digits, the others about their shortest length
_MIN_VOLUNTEERED = {"card": 12, "last4": 3, "cvv": 3, "expiry": 3, "account": 6, "sort": 6, "routing": 9,
                    "iban": 15, "ssn": 4, "id": 6, "phone": 7, "zip": 5, "dob": 4, "address": 1}
_EMAIL_CUES = set(_phrases("email | e mail | email address | e mail address"))
# a domain as ASR writes it: "outlook.com", ".com", "pixel.nashworks.co.uk"; or said: "dot com"
_DOMAIN_END = re.compile(r"\.(?:com|net|org|edu|gov|co|uk|io|us|ca|de|fr|au|nz|ie|info|biz|me)\W*$", re.I)
_SPOKEN_TLD = set("com net org edu gov uk io".split())
_DOMAIN_PIECES = _SPOKEN_TLD | {"co", "au", "ie", "de", "me"}  # strict mode's domain ends, as heard
_OPENERS = set("""yes yeah yep sure ok okay it's its it is that's uh um so of course my
    the email e mail address and""".split())


_ONE_BEFORE = set("the this that other which each every any no another a last first next only same old new".split())


def _heard_digits(text: str, before: str, after: str, dates: bool, asked_id: bool) -> int | None:
    """How many digits a word says, as ASR writes them (0: none); None for an amount, a time or a count, which
    ends a value ("$60", "dollar 82", "9:30", "5 pm"). asked_id: the word answers a question for an identifier,
    where a currency sign is Whisper's way of writing digits in groups ("$45.26 Niro 181, $59.08")."""
    following = tokens(after)[:1]
    signs = ":%" if asked_id else _CURRENCY + ":%"
    if any(c in text for c in signs) or (following and following[0] in _UNIT_AFTER) or \
            _CURRENCY_WORD.search(before) is not None:
        return None
    if n := sum(c.isdigit() for c in text):
        return n
    low = _bare(text).lower()
    if low == "one" and _bare(before).lower() in _ONE_BEFORE:
        return 0  # "the old one", "this one": a word
    if low in UNITS or low in ("oh", "o", "double", "triple"):
        return 1
    if low in TEENS or low in TENS or low == "hundred":
        return 2
    return 1 if dates and (low in MONTHS or low in ORDINALS) else 0


def _is_domain_end(call: _Call, w: int) -> bool:
    text = call.words[w].text.strip()
    if _DOMAIN_END.search(text):
        return True
    before = _bare(call.words[w - 1].text).lower() if w > 0 else ""
    return _bare(text).lower() in _SPOKEN_TLD and before == "dot"


class _Answers:
    """One call's utterances (a speaker's segments that continue each other) and what each was asked for."""

    def __init__(self, call: _Call, found: _Found):
        self.call, self.found = call, found
        self.word_kinds: dict[int, tuple[str, ...]] = {}  # a cue's kinds, at the word its last token is in
        for t in range(len(call.tokens)):
            kinds: list[str] = []
            if (cue := call.cues[t]) is not None:
                kinds.append(cue)
            if call.address_cue[t]:
                kinds.append("address")
            if any(tuple(call.tokens[max(0, t - len(p) + 1):t + 1]) == p for p in _EMAIL_CUES):
                kinds.append("email")
            if kinds:
                w = call.token_word[t]
                self.word_kinds[w] = tuple(dict.fromkeys([*self.word_kinds.get(w, ()), *kinds]))

    def asked(self, si: int) -> tuple[str, ...]:
        """The kinds that segment si's last ASK_TAIL tokens ask for, in the order said."""
        words = self.call.by_segment[si]
        if not words:
            return ()
        last = self.call.words[words[-1]].token + len(tokens(self.call.words[words[-1]].text))
        out: list[str] = []
        for w in words:
            if self.call.words[w].token >= last - ASK_TAIL and w in self.word_kinds:
                out += self.word_kinds[w]
        return tuple(dict.fromkeys(out))

    def _is_question(self, si: int) -> bool:
        words = self.call.by_segment[si]
        return bool(words) and self.call.words[words[-1]].text.rstrip().endswith("?")

    def _backchannel(self, si: int) -> bool:
        words = self.call.by_segment[si]
        said = [_bare(self.call.words[w].text).lower() for w in words]
        if self._is_question(si) or \
                said[:1] in (["and"], ["what"], ["what's"]) or "your" in said:
            return False  # a question ("And your native number?", "and your date number,"), however short
        return len(words) <= BACKCHANNEL_WORDS and not any(w in self.word_kinds for w in words) and \
            not any(c.isdigit() for w in words for c in self.call.words[w].text)

    def context(self, first: int) -> tuple[str, ...]:
        """What the utterance starting at segment first answers: the kinds asked by the other speaker's last
        segment before it (acknowledgements aside), said within JOIN_GAP_MS."""
        segments, speaker = self.call.segments, self.call.segments[first].speaker
        at = segments[first].start_ms
        for k in range(first - 1, max(-1, first - 8), -1):
            if at - segments[k].end_ms > JOIN_GAP_MS:
                return ()
            at = segments[k].start_ms
            if segments[k].speaker == speaker or self._backchannel(k):
                continue
            return self.asked(k)
        return ()

    def utterances(self) -> list[list[int]]:
        """Each speaker's segments that continue each other, with no digits said in between (an answer) and no
        answer to a question of theirs ("... a second address for work?" "m.jensen.nz" "Thanks. The five posters
        cost $60": the cue was answered, the rest is no address)."""
        out: list[list[int]] = []
        last: dict[str, tuple[int, int]] = {}  # speaker -> (segment, utterance)
        for si, segment in enumerate(self.call.segments):
            before = last.get(segment.speaker)
            others = [k for k in range(before[0] + 1, si) if self.call.segments[k].speaker != segment.speaker] \
                if before is not None else []
            if before is not None and self.call._continues(before[0], si) and \
                    not (others and self._is_question(before[0])) and all(self._backchannel(k) for k in others):
                out[before[1]].append(si)
                last[segment.speaker] = (si, before[1])
            else:
                out.append([si])
                last[segment.speaker] = (si, len(out) - 1)
        return out

    def take(self, words: list[int], entity: EntityType) -> None:
        """words found as entity, those not already taken; the digits said, for their read-backs."""
        taken = []
        for w in words:
            thread, a, b = self.call.word_at[w]
            if self.found.free(thread, a, b):
                self.found.add(thread, a, b, entity)
                taken.append(w)
        digits = "".join(r.digits for w in taken for r in digit_runs(self.call.words[w].text))
        if len(digits) >= 4:
            self.found.values.append((entity, digits))

    def run(self) -> None:
        for segments in self.utterances():
            words = [w for si in segments for w in self.call.by_segment[si]]
            kinds = self.context(segments[0])
            self.emails(words, kinds)
            self.values(words, kinds)

    def emails(self, words: list[int], kinds: tuple[str, ...]) -> None:
        """In answer to an e-mail (or an address) question, or after "my email is": the words from the first
        after the opening ("yes, it's") to a domain ("... outlook.com", "... dot com"), even without an "at"."""
        on, start = bool({"email", "address"} & set(kinds)), 0
        for i, w in enumerate(words):
            if "email" in self.word_kinds.get(w, ()):
                on, start = True, i + 1
                continue
            if not on:
                continue
            if start == i and _bare(self.call.words[w].text).lower() in _OPENERS:
                start = i + 1
                continue
            if _is_domain_end(self.call, w):
                self.take(words[max(start, i + 1 - EMAIL_WORDS):i + 1], EntityType.EMAIL)
                start = i + 1

    def values(self, words: list[int], asked: tuple[str, ...]) -> None:
        """Digits heard in the context of a question or of the speaker's own cue, run by run (a run may hold a few
        misheard words between its digits), taken as what was asked for."""
        kinds, own, digits, gap = asked, False, 0, 0
        run: list[int] = []
        runs: list[tuple[int, int, int, tuple[str, ...], bool]] = []  # first, last, digits, kinds, volunteered
        for i, w in enumerate(words):
            cue = self.word_kinds.get(w)
            nxt = self.call.words[words[i + 1]].text if i + 1 < len(words) else ""
            prev = self.call.words[words[i - 1]].text if i else ""
            asked_id = not own and "other" not in kinds and any(k in _KIND_ENTITY for k in kinds)
            n = None if cue else _heard_digits(self.call.words[w].text, prev, nxt, "dob" in kinds, asked_id)
            most = DIGIT_GAP if own else ANSWER_GAP
            if n and (not run or gap <= most):
                run, digits, gap = [*run, i], digits + n, 0
                continue
            if n == 0 and run and gap < most:
                gap += 1
                continue
            if run:
                runs.append((run[0], run[-1], digits, kinds, own))
            run, digits, gap = ([i], n, 0) if n else ([], 0, 0)
            if cue:
                kinds, own = cue, True
        if run:
            runs.append((run[0], run[-1], digits, kinds, own))
        # a card volunteered in pieces ("the number is 5182 1993", "mm-hmm", "5181 9098"): the pieces together
        card_pieces = sum(d for _, _, d, k, o in runs if o and k[:1] == ("card",))
        for first, last, digits, kinds, volunteered in runs:
            self.value(words, first, last, card_pieces if volunteered and kinds[:1] == ("card",) else digits,
                       kinds, volunteered)

    def value(self, words: list[int], first: int, last: int, digits: int, kinds: tuple[str, ...],
              volunteered: bool) -> None:
        texts = [_bare(self.call.words[w].text).lower() for w in words[first:last + 1]]
        dated = any(t in MONTHS for t in texts) or any(re.fullmatch(r"(19|20)\d\d", t) for t in texts)
        wanted = [k for k in kinds if k in _KIND_ENTITY and (k != "dob" or dated or kinds == ("dob",))]
        if len(wanted) > 1 and "last4" in wanted:  # "the last four of your social": the social's
            wanted.remove("last4")
        if not wanted:
            return
        entity = _KIND_ENTITY[wanted[0]]
        minimum = _MIN_VOLUNTEERED if volunteered else _MIN_DIGITS
        if digits < min(minimum.get(k, 4) for k in wanted if _KIND_ENTITY[k] == entity):
            return
        if entity == EntityType.ADDRESS and "address" in kinds:
            first, last = self.address(words, first, last)
        if first and _bare(self.call.words[words[first - 1]].text).lower() in ("plus", "+"):
            first -= 1  # "plus four four ...": the country code's "plus" too
        self.take(words[first:last + 1], entity)

    def address(self, words: list[int], first: int, last: int) -> tuple[int, int]:
        """An address said in answer: from its flat or house number to the end of the sentence its last number
        is in (the street, the town, the state)."""
        if first >= 2 and _bare(self.call.words[words[first - 2]].text).lower() in _UNIT:
            first -= 2  # "Flat 2, 14 ...", "apartment 4B, 350 ..."
        elif first >= 1 and _bare(self.call.words[words[first - 1]].text).lower() in _UNIT:
            first -= 1
        end = last
        while end + 1 < len(words) and end - first < ADDRESS_WORDS and \
                self.call.words[words[end]].text.rstrip()[-1:] not in ".?!":
            end += 1
        return first, end


def _answers(call: _Call, found: _Found) -> None:
    _Answers(call, found).run()


# --- names (rules) ----------------------------------------------------------------------------------

# After these, the next words are a name whatever their case.
_NAME_CUES = _phrases("""my name is | my name's | name is | the name is | name's | name on the card is |
    name on the card | cardholder name | cardholder's name | first name is | last name is | surname is |
    full name is | my first name is | my last name is | my surname is | it's under | under the name""")
# Cues by which a speaker says who they are or whom they want: a first and last name after them is a name.
_IDENTITY_CUES = _phrases("""this is | i'm | i am | it's | speaking with | speaking to | speak to | speak with |
    talking to | talking with | ask for""")
# After these, a capitalised word is a name when it is a known first name or says so ("X speaking", "X from").
_WEAK_NAME_CUES = _phrases("""this is | i'm | i am | it's | speaking with | speaking to | speak to | speak with |
    talking to | talking with | thank you | thanks | hi | hello | hey | dear | morning | afternoon | evening | bye |
    goodbye | ask for | with | through to | you've reached""")
# After these, one capitalised word ending the clause is a name: "this is Ravi.", "you're speaking with Denise.",
# "you've reached Marcus." (not a business: "you've reached Harbor Books.")
_INTRODUCTIONS = _phrases("this is | speaking with | speaking to | through to | you've reached")
_TITLES = set("mr mrs ms miss mx dr mister missus doctor prof professor sir madam".split())
_NOT_NAME = set("""i i'm a an the my your his her our their this that these those it it's is was be am are just
    calling call sorry not so very really fine good great well here there what who going about looking trying
    having still also all okay ok yes yeah no sure glad happy afraid interested from with and or but for to of in
    on at by hi hello thanks thank you please sir madam how can could would will shall may might do does did have
    has had get got one two three four five six seven eight nine ten calling again back now today tomorrow right
    correct speaking customer agent service support team bank card account number department help line the
    we us they them he she him me mine yours alright absolutely certainly of course wondering ringing""".split())
_NOT_NAME |= set(MONTHS) | set("monday tuesday wednesday thursday friday saturday sunday".split())
_FIRST_NAMES = set("""aaron adam adrian ahmed aisha alan albert alex alexander alice alicia amanda amber amelia amir
    amy ana andrea andrew angela anna anne anthony antonio arjun arthur ashley barbara ben benjamin beth betty bill
    bob brandon brenda brian bruce carl carlos carmen carol caroline catherine charles charlie charlotte chen chloe
    chris christina christine christopher claire daniel david deborah dennis diana diane donald donna dorothy
    douglas dylan edward elena elizabeth ella emily emma eric ethan eugene evelyn fatima frank gary george grace
    gregory hannah harold harry helen henry isabella jack jacob james jane janet jason jennifer jeremy jessica joan
    john jonathan jordan jose joseph joshua joyce juan judith julia julie justin karen katherine kathleen kelly
    kenneth kevin kim kyle laura lauren lee leo li linda lisa liam lucas lucy luis maria mark martha mary matthew
    megan melissa michael michelle mike mohammed muhammad nancy natalie nathan nicholas nicole noah olivia oliver omar
    pamela patricia patrick paul peter priya rachel raj ralph raymond rebecca richard robert roger ronald rose
    ruth ryan samantha samuel sandra sara sarah scott sean sharon shirley sofia sophia stephanie stephen steven
    susan teresa thomas timothy tom tyler victoria vincent walter wei william zoe""".split())
# Words that make a capitalised pair a business, not a person ("Northwind Energy", "Harbor Books").
_ORG_WORDS = set("""energy internet books bank banking health healthcare dental clinic hospital hotel hotels travel
    mobile telecom software systems services service support insurance florists flowers gardens garden furniture
    market supermarket credit union savings mortgage mortgages appliances library council office group company
    corporation corp inc ltd limited solutions airlines airways pharmacy motors auto logistics delivery deliveries
    utilities water gas electric power media print printing store stores shop team department desk center centre
    customer""".split())
_WORD_CHARS = re.compile(r"[^\w'’-]")


def _bare(text: str) -> str:
    return _WORD_CHARS.sub("", text).replace("’", "'")


def _is_capitalised(text: str) -> bool:
    bare = _bare(text)
    return len(bare) >= 2 and bare[0].isupper() and bare.replace("'", "").replace("-", "").isalpha()


def _ends_clause(text: str) -> bool:
    return text.rstrip()[-1:] in (",", ".", "?", "!", ";", ":")


def _names(call: _Call, found: _Found) -> None:
    names: set[str] = set()
    for si, words in enumerate(call.by_segment):
        texts = [call.words[w].text for w in words]
        low = [_bare(t).lower() for t in texts]
        asked = si > 0 and _asks_name(call, si - 1)
        for i in range(len(words)):
            strong = any(tuple(low[max(0, i - len(c)):i]) == c for c in _NAME_CUES) and \
                not _ends_clause(texts[i - 1])
            # the answer to "Can I have the name on the card?": "Kenji Watanabe.", "Sure, it's Helen Park."
            strong = strong or (asked and all(x in _ANSWER_OPENERS for x in low[:i]))
            weak = any(tuple(low[max(0, i - len(c)):i]) == c for c in _WEAK_NAME_CUES)
            title = i > 0 and low[i - 1].rstrip(".") in _TITLES
            # "..., James speaking."
            opens = i == 0 or _ends_clause(texts[i - 1])
            # "Claims Department Gloria speaking.", "Pensions service, manual, speaking.": the word before a
            # "speaking" that ends the sentence, in any case (ASR mishears the name and drops the comma)
            speaking = i + 1 < len(low) and low[i + 1] == "speaking" and low[i] not in _ORG_WORDS and (
                i + 2 == len(low) or texts[i + 1].rstrip()[-1:] in ".?!")
            if not (strong or weak or title or opens or speaking):
                continue
            span = _name_at(texts, low, i, lowercase_ok=strong or speaking, answer=asked and strong)
            if not span:
                continue
            first = low[i]
            says_so = i + span < len(low) and low[i + span] in ("speaking", "from", "here")
            if not (strong or weak or title):
                says_so = says_so and low[i + span] == "speaking"
                if not says_so:
                    continue
            # "this is Marcus Bell", "this is Ravi." (not "this is Northwind Energy")
            identity = any(tuple(low[max(0, i - len(c)):i]) == c for c in _IDENTITY_CUES)
            full = identity and span >= 2 and low[i + span - 1] not in _ORG_WORDS and low[i] not in _ORG_WORDS
            alone = span == 1 and _ends_clause(texts[i]) and low[i] not in _ORG_WORDS and \
                any(tuple(low[max(0, i - len(c)):i]) == c for c in _INTRODUCTIONS)
            if strong or title or first in _FIRST_NAMES or says_so or _heard_as(first, names) or full or alone:
                end = i + span
                # the name spelled out after it: "Sarah, S A R A H"
                while end < len(texts) and len(low[end]) == 1 and low[end].isalpha() and (
                        low[end] not in "ai" or end > i + span):
                    end += 1
                if not any(w in found.words[EntityType.EMAIL] for w in words[i:end]):
                    found.add_words(words[i:end], EntityType.PERSON_NAME)
                names.update(low[i:i + span])
    # a name found once is a name wherever it is said again ("Thanks, Tom"), in any case (ASR may write none)
    for w, word in enumerate(call.words):
        if _bare(word.text).lower() in names and w not in found.words[EntityType.EMAIL]:
            found.add_words([w], EntityType.PERSON_NAME)


NAME_LIKENESS = 0.75  # difflib ratio: "Rami" for "Ravi" (0.75), "Okafer" for "Okafor" (0.83)


def _heard_as(word: str, names: set[str]) -> bool:
    """Whether word is one of the call's names, or one heard a letter or two differently (four letters or more)."""
    return word in names or (len(word) >= 4 and any(
        len(name) >= 4 and SequenceMatcher(None, word, name, autojunk=False).ratio() >= NAME_LIKENESS
        for name in names))


_ANSWER_OPENERS = set("yes yeah yep sure ok okay it's its it is that's uh um so of course".split())
_NAME_REQUESTS = _phrases("""name | your name | the name | name please | full name | name on the card |
    speaking with | who am i speaking with | who's calling | who is calling | patient's name""")


def _asks_name(call: _Call, si: int) -> bool:
    """Whether segment si ends by asking for a name."""
    words = call.by_segment[si]
    tail = [t for w in words[-6:] for t in tokens(call.words[w].text)]
    return bool(words) and call.words[words[-1]].text.rstrip().endswith("?") and any(
        tuple(tail[-len(p):]) == p or tuple(tail[-len(p) - 1:-1]) == p for p in _NAME_REQUESTS)


def _name_at(texts: list[str], low: list[str], i: int, lowercase_ok: bool, answer: bool = False) -> int:
    """How many words from i make a name (at most three): capitalised words not in _NOT_NAME (any word not in it,
    after a strong cue); a word ending a clause ends it. In the answer to a name question, only one ending a
    sentence, and four words (ASR cuts a misheard name with commas: "Yes, it's missing, don't wait, feel.")."""
    n = 0
    while i + n < len(texts) and n < (4 if answer else 3):
        word, bare = texts[i + n], low[i + n]
        ok = len(bare) > 1 and bare not in _NOT_NAME and bare not in _TITLES and \
            bare.replace("'", "").replace("-", "").isalpha()
        if not ok or not (_is_capitalised(word) or (bare.islower() and (lowercase_ok or bare in _FIRST_NAMES))):
            break
        n += 1
        if _ends_clause(word) and not (answer and word.rstrip()[-1:] == ","):
            break
    return n


# --- addresses (rules) ---------------------------------------------------------------------------------

_STREET = set("""street st road rd avenue ave lane ln drive dr boulevard blvd court ct place pl way terrace close
    crescent square sq parkway pkwy highway hwy circle cir grove gardens mews walk row hill park trail plaza""".split())
_UNIT = set("apartment apt unit suite flat number no #".split())
_SPOKEN_DIGITS = set(UNITS) | set(TEENS) | set(TENS) | {"oh", "hundred", "double", "triple"}


def _house_number(low: list[str], texts: list[str], i: int) -> int:
    """How many words from i say a house number ("22", "221B", "twenty two", "one two three"), 0 if none."""
    if re.fullmatch(r"\d{1,5}[a-z]?", low[i]) and not re.search(r"[$£€:%]", texts[i]):
        return 1
    n = 0
    while i + n < len(low) and low[i + n] in _SPOKEN_DIGITS and n < 6 and not _ends_clause(texts[i + n]):
        n += 1
    return n


def _addresses(call: _Call, found: _Found) -> None:
    for words in call.by_segment:
        texts = [call.words[w].text for w in words]
        low = [_bare(t).lower() for t in texts]
        i = 0
        while i < len(words):
            number = _house_number(low, texts, i)
            end = _street_after(call, words, texts, low, i, number) if number else 0
            if not end:
                i += 1
                continue
            start = i
            if start >= 2 and low[start - 2] in _UNIT:  # "Flat 3, 22 Baker Street"
                start -= 2
            end = _address_tail(texts, low, end)
            found.add_words(words[start:end], EntityType.ADDRESS)
            i = end


def _street_after(call: _Call, words: list[int], texts: list[str], low: list[str], i: int, number: int) -> int:
    """The end (exclusive) of "<number> <street words> <street suffix>" starting at word i, 0 if it is not one."""
    cued = call.cued(call.words[words[i]].token, "address", CUE_WINDOW + 10)
    j = i + number
    for k in range(j, min(j + 4, len(words))):
        bare = low[k].rstrip(".")
        if bare in _STREET and k > j:
            return k + 1
        street_word = (bare.isalpha() and bare not in _NOT_NAME and (_is_capitalised(texts[k]) or cued)) or \
            re.fullmatch(r"\d{1,3}(st|nd|rd|th)", bare) is not None
        if not street_word or _ends_clause(texts[k]):
            return 0
    return 0


def _address_tail(texts: list[str], low: list[str], end: int) -> int:
    """The end of the address after its street: a flat or unit, the town, the state, the ZIP code or postcode."""
    k = end
    while k < len(texts) and k - end < 12 and not (texts[k - 1].rstrip()[-1:] in ".?!" and low[k - 1] not in _STREET):
        word, bare = texts[k], low[k]
        if bare in _UNIT and k + 1 < len(texts):
            k += 2
            continue
        town = _is_capitalised(word) and bare not in _NOT_NAME
        code = (re.fullmatch(r"[A-Z0-9]{1,4}", _bare(word)) is not None and _bare(word) not in ("I", "A")) or \
            re.fullmatch(r"\d{5}(?:-\d{4})?", bare) is not None or bare in _SPOKEN_DIGITS
        if not (town or code):
            break
        k += 1
    return k


# --- the stage ------------------------------------------------------------------------------------------


# --- strict mode: what a recogniser may have misheard -------------------------------------------------------


class Mode(StrEnum):
    PRECISE = "precise"  # the values the rules read in the words
    STRICT = "strict"  # as well: answers to requests, whole, and runs of digits, whatever was heard


# What asks for each entity's value, per language (English first): the other speaker's answer after one is redacted
# whole, whatever the recogniser made of it. A request ends its turn (within REQUEST_TAIL tokens of its end).
REQUESTS: dict[str, dict[EntityType, str]] = {"en": {
    EntityType.PAYMENT_CARD: """long number on the card | number on the card | card number | the card | card details |
        expiry | expiry date | expiration | expiration date | when does it expire | three digits on the back |
        digits on the back | back of the card | security code | cvv | cvc | cv2 | last four digits | digits |
        front of the card""",
    EntityType.BANK_ACCOUNT: """sort code | account number | bank account | routing number | iban | bank details""",
    EntityType.NATIONAL_ID: """social security number | social security | ssn | national insurance number |
        national insurance | ni number | passport number | id number | driver's license number | tax id""",
    EntityType.DATE_OF_BIRTH: "date of birth | birth date | birthday | when were you born | your date",
    EntityType.EMAIL: "email | e mail | email address | e mail address | spell your email | spell your e mail",
    EntityType.PHONE_NUMBER: """phone number | best number | number to call | contact number | mobile number |
        call you back | callback number | call back number""",
}}
# The least cosine similarity (the text embedding model) of a turn's last sentence to its nearest example request
# that makes it a request: fitted on the benchmark's fit part (benchmarks/redaction.py --requests).
REQUEST_SIMILARITY = 0.68
REQUEST_TAIL = 8  # tokens: "what's the card number please, when you're ready?" still ends with its request
# Words a recogniser writes for a digit said on a phone line ("four" as "for", "zero" as "Nero"); they count only
# inside a run that has two real digits, so "to" and "for" in sentences never make one.
MISHEARD_DIGITS = {"for": 1, "to": 1, "too": 1, "ate": 1, "oh": 1, "o": 1, "won": 1, "tree": 1, "free": 1,
                   "nero": 1, "niro": 1, "i'm": 1}  # "five" loses its f in the phone band: "617, I'm I'm I'm 0142"
# letters heard in or beside digits, one or two at a time ("m3308", "4x", "x3m42819306", "o770i13462", "nl2"; not
# an ordinal or a time: "4th", "3pm")
_DIGITS_WITH_A_LETTER = re.compile(
    r"(?=\d*[a-z])(?!\d+(?:st|nd|rd|th|am|pm)$)[a-z]{0,2}\d+(?:[a-z]{1,2}\d+)*[a-z]{0,2}")
DIGIT_RUN = 4  # digits: the fewest that identify a part of a card (PCI's leak test: 4 consecutive digits)
SHORT_RUN = 3  # digits: after a card, bank, ID or birth cue, a security code, or an expiry heard a digit short
LAST_FOUR_RUN = 2  # digits: after "the card ending", two of its last four heard ("I'm 0, I'm 8")
LAST_FOUR_WORDS = 4  # words right after "the card ending" or "ends in": its last four, however heard ("I know for")
LONG_NUMBER = 6  # digits in one written number that make it a run alone, even named as no personal data
CARD_DIGITS = 12  # the fewest digits of a card number (Maestro): a run this long with no cue is taken for one
RUN_GAP = 1  # words: a misheard word between two digits of a run ("I1821 double-dine free", "11 Nash Nero 2")
OPENER_WORDS = 3  # words that say no digit in a turn that says a value alone ("Sure, it's ...", "So ...")
DATE_REACH = 3  # words: a month, a day or an ordinal this close before a year makes a date ("on September 1946")
DATE_AFTER = 8  # words: a month or an ordinal this close after a year does too ("1941, sorry, I mean, the 4th of May")
EXPIRY_CONTEXT_MS = 60_000  # a month with a number said this soon after a card is named may be its expiry
_CARD_CUES = frozenset({"card", "last4", "cvv", "expiry"})
# Values given over several turns, with backchannels and read-backs between: a window takes their turns
# (_value_windows); a birth date, a phone number or an id is one answer (windows for them blanked a long call's
# appointment times and prices, benchmarks/RESULTS.md)
WINDOWED = (EntityType.PAYMENT_CARD, EntityType.BANK_ACCOUNT)
# What an agent says once a value has been taken (a payment went through, a caller was found): it closes the
# value's window (_value_windows)
_TAKEN = _phrases("""processed | approved | authorised | authorized | declined | gone through | went through |
    payment is complete | payment complete | payment has been taken | payment's been taken | payment taken |
    that's saved | that's been saved | all done | successful | that's set up | all set up | i found you |
    found your account | you're verified | you've been verified | anything else | is paid | been paid | that's paid |
    that worked | is confirmed | all set | payment received | received your payment""")
SPELLED_LETTERS = 4  # single letters in a turn, at least half its words: a value spelled out ("J O N dot M E R ...")
AT_DOMAIN_WORDS = 4  # words: a domain's end this soon after "at" ends an address heard without its dots
HEARD_DOMAIN_ENDS = frozenset("com come calm net next org uk".split())  # a domain's end after "dot", as heard
_EMAILED = frozenset("emailed emails emailing".split())  # strict mode: these name an e-mail too
EMAIL_CONTEXT_MS = 30_000  # an e-mail named this soon before a turn spelling something out makes it the e-mail's
# mail providers: one heard is an e-mail said around it, however garbled the rest ("noshnublub8a .gmail,")
MAIL_PROVIDERS = frozenset("""gmail googlemail hotmail outlook yahoo icloud aol proton protonmail gmx yandex zoho
    btinternet bigpond posteo ziggo comcast""".split())
CONFIRMATIONS = frozenset("yes yeah yep yup correct exactly that's right perfect mm mhm uh".split())  # first words
UTTERANCE_GAP_MS = 1_000  # a speaker's next segment this soon goes on with what they were saying
NAMED_BY = 3  # tokens: an "other" cue this close before a run names it ("order number 5318", "reference is 77120")
LOW_PROBABILITY = 0.5  # a word heard with less is one the recogniser may have misplaced or misheard
LOW_PROBABILITY_MARGIN_MS = 2_000  # a span with such a word around it takes this much more of its turn each side
_NUMERIC = (EntityType.PAYMENT_CARD, EntityType.BANK_ACCOUNT, EntityType.NATIONAL_ID, EntityType.PHONE_NUMBER,
            EntityType.DATE_OF_BIRTH)
_CUE_ENTITY = {"card": EntityType.PAYMENT_CARD, "last4": EntityType.PAYMENT_CARD, "cvv": EntityType.PAYMENT_CARD,
               "expiry": EntityType.PAYMENT_CARD, "account": EntityType.BANK_ACCOUNT, "iban": EntityType.BANK_ACCOUNT,
               "sort": EntityType.BANK_ACCOUNT, "routing": EntityType.BANK_ACCOUNT, "ssn": EntityType.NATIONAL_ID,
               "id": EntityType.NATIONAL_ID, "phone": EntityType.PHONE_NUMBER, "dob": EntityType.DATE_OF_BIRTH}
_REQUEST_PHRASES = {lang: {phrase: entity for entity, spec in table.items() for phrase in _phrases(spec)}
                    for lang, table in REQUESTS.items()}


def _digits_said(token: str, before: str | None) -> int:
    """How many digits token says ("4242": 4, "forty": 2, "two" after "forty": 0, "m3308": 4), -1 when it is no
    number word."""
    if token.isdigit():
        return len(token)
    if token in UNITS:
        return 0 if before in TENS else 1
    if token in TEENS or token in TENS or token == "hundred":
        return 2
    if token in ("double", "triple"):
        return 0
    if _DIGITS_WITH_A_LETTER.fullmatch(token):  # Whisper on a phone line: "m3308", "4x", "4d12"
        return sum(ch.isdigit() for ch in token)
    return MISHEARD_DIGITS.get(token, -1)


def _digits_in(toks: list[str]) -> int:
    """How many digits tokens say, each read after the one before ("forty", "two": 2)."""
    before: list[str | None] = [None, *toks[:-1]] if toks else []
    return sum(max(_digits_said(t, b), 0) for t, b in zip(toks, before, strict=True))


def _digit_runs(call: _Call) -> list[list[int]]:
    """The words of each run of spoken digits, number words or digit-like mishearings in an utterance (_utterances;
    RUN_GAP other words may stand between two of its digits) saying DIGIT_RUN digits or more (SHORT_RUN after a
    card, bank, ID or birth cue), with two real digit words, or one with a letter stuck to it ("I1821"), or one
    making the whole utterance; not an amount, a time, or years alone ("$1,250", "13:30", "2024", "in 2019 and
    2020")."""
    out = []
    for words in _utterances(call):
        run: list[int] = []
        gap: list[int] = []
        for w in [*words, -1]:
            toks = tokens(call.words[w].text) if w >= 0 else []
            if toks and all(_digits_said(t, None) >= 0 for t in toks):
                run += [*gap, w]
                gap = []
            elif run and w >= 0 and len(gap) < RUN_GAP and (gap or _real_digits(call, run[-1])):
                gap.append(w)  # after a real digit only: "for room 1,400" is no run of "for"
            else:
                if run and _is_run(call, run, whole=len(run) == len(words)):
                    out.append(run)
                run, gap = [], []
    return out


def _utterances(call: _Call) -> list[list[int]]:
    """The words of each utterance: a speaker's segments that follow each other with no one else's between and at most
    UTTERANCE_GAP_MS apart (the recogniser cuts a number read slowly into segments: "2 / 0 1 / 9 2 / 0 6 / ...")."""
    out: list[list[int]] = []
    for si, words in enumerate(call.by_segment):
        if _same_utterance(call, si):
            out[-1] += words
        else:
            out.append(list(words))
    return out


def _same_utterance(call: _Call, si: int) -> bool:
    """Whether segment si goes right on from the segment before it: the same speaker, within UTTERANCE_GAP_MS."""
    before = call.segments[si - 1] if si > 0 else None
    return before is not None and before.speaker == call.segments[si].speaker and \
        call.segments[si].start_ms - before.end_ms <= UTTERANCE_GAP_MS


def _run_names(call: _Call, run: list[int], cue: EntityType | None) -> EntityType | None:
    """The entity a run of digits says: its cue's, or a card's where it is as long as a card's shortest and no cue
    names it ("6 -0 -1 -1 -0 -4 ..." after "the long one across the middle"; not after "order number")."""
    if cue is not None or call.nearest_cue(call.words[run[0]].token, NAMED_BY) == "other":
        return cue
    said = [t for r in run for t in tokens(call.words[r].text)]
    return EntityType.PAYMENT_CARD if _digits_in(said) >= CARD_DIGITS else None


def _is_real_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token) or token in UNITS or token in TEENS or token in TENS


def _real_digits(call: _Call, w: int) -> bool:
    return any(map(_is_real_digit, tokens(call.words[w].text)))


def _is_run(call: _Call, run: list[int], whole: bool) -> bool:
    """Whether the words of run make a run of digits: see _digit_runs."""
    said = [t for r in run for t in tokens(call.words[r].text)]
    real = [t for t in said if _is_real_digit(t)]
    lettered = any(_DIGITS_WITH_A_LETTER.fullmatch(t) and sum(ch.isdigit() for ch in t) >= 2 for t in real)
    years = bool(real) and all(re.fullmatch(r"(19|20)\d\d", t) for t in real)
    text = " ".join(call.words[r].text for r in run)
    cue = call.nearest_cue(call.words[run[0]].token)
    least = LAST_FOUR_RUN if cue == "last4" else SHORT_RUN if cue in _CUE_ENTITY and cue != "phone" else DIGIT_RUN
    # one written number is a run where it is the whole turn: an answer ("1228." for "twelve twenty eight"); where
    # it has DIGIT_RUN digits (PCI's leak), not a year, and no "other" cue names it right before ("... and mid,
    # 3309," for "ends in three three oh nine"; not "confirmation number is 22918"); or LONG_NUMBER ("0770090123.")
    other = call.nearest_cue(call.words[run[0]].token, NAMED_BY) == "other"
    long = any(sum(ch.isdigit() for ch in t) >= (LONG_NUMBER if other else DIGIT_RUN) for t in real)
    return _digits_in(said) >= least and (len(real) >= 2 or lettered or whole or long) and not years and \
        not _amount_or_time(text)


def _amount_or_time(text: str) -> bool:
    """Whether digits written in text are an amount or a time ("$1,250", "13:30", "15%"), no run of a value."""
    return re.search(rf"[{_CURRENCY}:%]", text) is not None


def requests_by_words(segments: Sequence[TranscriptSegment], language: str | None) -> dict[int, EntityType]:
    """The segments that end with a request for a sensitive value in its words (REQUESTS, in English and the
    language): segment index -> the entity asked for."""
    phrases = _REQUEST_PHRASES["en"] | _REQUEST_PHRASES.get(language_code(language) or "en", {})
    longest = max(len(p) for p in phrases)
    out = {}
    for si, segment in enumerate(segments):
        toks = tokens(segment.text)
        entity = next((phrases[tuple(toks[e - n:e])] for e in range(len(toks), max(0, len(toks) - REQUEST_TAIL), -1)
                       for n in range(min(longest, e), 0, -1) if tuple(toks[e - n:e]) in phrases), None)
        if entity is not None:
            out[si] = entity
    return out


def _last_sentence(text: str) -> str:
    return re.split(r"(?<=[.?!])\s+", text.strip())[-1]


@lru_cache(maxsize=8)
def _example_vectors(embedder: Any, language: str) -> tuple[np.ndarray, list[EntityType | None]]:
    """The embedded REQUEST_EXAMPLES (English's, and the language's) and OTHER_REQUESTS, and each one's entity
    (None: a request for something else)."""
    texts: list[str] = []
    kinds: list[EntityType | None] = []
    for lang in dict.fromkeys(("en", language)):
        for entity, examples in REQUEST_EXAMPLES[lang].items():
            texts += examples
            kinds += [EntityType(entity)] * len(examples)
        texts += OTHER_REQUESTS[lang]
        kinds += [None] * len(OTHER_REQUESTS[lang])
    return np.asarray(embedder.embed(texts)), kinds


def requests_by_meaning(segments: Sequence[TranscriptSegment], embedder: Any, language: str | None,
                        threshold: float = REQUEST_SIMILARITY) -> dict[int, tuple[EntityType, float]]:
    """The segments whose last sentence means a request for a sensitive value: segment index -> (entity, cosine
    similarity) where its nearest example (request_examples, in English and the call's language where it has
    some) asks for that entity, at threshold or above. None where the language has no examples: the text model
    would compare words it does not read."""
    language = language_code(language) or "en"
    if language not in REQUEST_EXAMPLES:
        return {}
    vectors, kinds = _example_vectors(embedder, language)
    asked = [i for i, s in enumerate(segments) if any(ch.isalpha() for ch in s.text)]
    if not asked:
        return {}
    similarity = np.asarray(embedder.embed([_last_sentence(segments[i].text) for i in asked])) @ vectors.T
    out = {}
    for i, row in zip(asked, similarity, strict=True):
        best = int(np.argmax(row))
        entity = kinds[best]
        if entity is not None and row[best] >= threshold:
            out[i] = (entity, float(row[best]))
    return out


def _requests(call: _Call, language: str | None, meant: dict[int, tuple[EntityType, float]] | None
              ) -> dict[int, tuple[EntityType, str]]:
    """The segments that ask for a sensitive value: segment index -> (the entity, "request" where its words say so,
    or "request_meaning" where its meaning does: `meant`, requests_by_meaning, a turn of digits aside)."""
    out = {si: (entity, "request") for si, entity in requests_by_words(call.segments, language).items()}
    for si, (entity, _) in (meant or {}).items():
        if si not in out and not _mostly_digits(call, si):
            out[si] = (entity, "request_meaning")
    return dict(sorted(out.items()))


def _requested_answers(call: _Call, found: _Found, wanted: list[EntityType],
                       requests: dict[int, tuple[EntityType, str]], max_answer_ms: int
                       ) -> list[tuple[EntityType, list[int], str]]:
    """Each request for a wanted entity's value and the words of its answer: the other speakers' turns from the end
    of the request until the asker speaks again with something other than a read-back (a turn of digits), at most
    max_answer_ms after the request. The asker's read-backs are part of it, and a short tail of the request said
    before anyone answers does not end it ("an email for the order confirmation" "Your"); a turn confirming a
    read-back ("Yes, that's it.": no digits) is not. A speaker who announces their own value ("my email is", not a
    question) is answered by their own next turns, while they go on (_Call._continues). Once the asker has moved
    on, a numeric value's answerer still gives it in turns that are mostly digits ("$9 .27," and "$4 .12." after
    a garbled "and the expiry date?" and "the three digits on the back?"): those are part of it, within the same
    bound and until another request (which ends it at once when the asker makes it). A turn in which the rules
    found a value of the entity says it rather than asks for it ("... Diego Fernandes at e-mail.net."). The asker
    spelling an e-mail back is a read-back too ("JOM .M .I .R .C ..."). `requests`: _requests."""
    out = []
    for si, (entity, by) in requests.items():
        if entity not in wanted or found.words[entity] & set(call.by_segment[si]):
            continue
        asker, until = call.segments[si].speaker, call.segments[si].end_ms + max_answer_ms
        answer: list[int] = []
        own, last = by == "request" and _announces(call, si), si
        answered = read_back = moved_on = False
        for k in range(si + 1, len(call.segments)):
            segment = call.segments[k]
            if segment.start_ms >= until:
                break
            if moved_on:
                if k in requests:
                    break  # a new request: its answer is its own
                if segment.speaker != asker and entity in _NUMERIC and _mostly_digits(call, k):
                    answer += [w for w in call.by_segment[k] if call.words[w].start_ms < until]
                continue
            if own:
                if segment.speaker != asker:
                    continue  # between two of the announcer's turns: see _continues
                if not call._continues(last, k):
                    break
                last = k
            elif segment.speaker == asker:
                if _mostly_digits(call, k) or (entity == EntityType.EMAIL and _spelled(call, k)):
                    read_back = True
                elif k in requests:
                    break
                elif not answered and len(call.by_segment[k]) <= BACKCHANNEL_WORDS:
                    continue
                else:
                    moved_on = True
                    continue
            else:
                answered = True
                if read_back and not _says_digits(call, k):
                    continue
            answer += [w for w in call.by_segment[k] if call.words[w].start_ms < until]
        if answer:
            out.append((entity, answer, by))
    return out


def _value_windows(call: _Call, found: _Found, requests: dict[int, tuple[EntityType, str]],
                   cued_runs: dict[int, EntityType], run_segments: set[int], entities: list[EntityType],
                   max_answer_ms: int) -> list[tuple[EntityType, list[int]]]:
    """The turns that say a number while a card or bank details are being given (`entities`, of WINDOWED), whole,
    with the value's entity. A window opens at a request for such a value that the other speakers answer with
    digits (SHORT_RUN or more, before the asker says more than a backchannel), or after a turn where the rules
    found one or a run of digits names one (`cued_runs`: segment -> entity, _run_names), taking the other speaker's
    turn right before it where that says a number (the answer a read-back repeats). It lasts until someone says
    the value was taken (_TAKEN: "that's gone through", "anything else"), a value of another kind is asked for in
    words (a request found by its meaning alone is too loose to end it: "Aren't you an exploration?"), or
    max_answer_ms pass after the window's last request or value. A card is given over several turns, with
    backchannels, corrections and read-backs between, and Whisper writes digits as anything on a phone line
    ("7692," after "Mm-hm. Go on."; a read-back heard "$1 .14, $2 .806, $1 .175"): while a value is being given,
    what either side says with a number in it (_says_number) is taken, as a payment pause would take it, and a turn
    with a run of digits in it (`run_segments`, _digit_runs) keeps the window open for max_answer_ms more (not
    talk with numbers in it: "it's down for about 5 minutes each time", "you're on the 150 package" kept a
    window open through a fault call). Where the window's request is known, the giver's other turns
    are taken too, within the bound (_gives: an expiry heard as words, "Hermann's last went in iron." for "Seven
    slash twenty-nine."); so is what a speaker says right on from a turn taken (UTTERANCE_GAP_MS: "right
    -wentifics" for "July twenty-six", the end of a read-back Whisper cut off); the asker's other turns without a
    number stay, and a card talked about but not given ("Have you still got the card?" "Yes, it's in my purse.")
    opens no window."""
    out: list[tuple[EntityType, list[int]]] = []
    entity: EntityType | None = None
    until, asker = 0, None  # asker: who made the window's last request, where one was made
    for k, segment in enumerate(call.segments):
        asked, by = requests.get(k, (None, ""))
        if entity is not None and (segment.start_ms >= until or _says_taken(call, k)
                                   or (asked not in (None, *entities) and by == "request")):
            entity = None
        words = set(call.by_segment[k])
        said = next((e for e in entities if found.words[e] & words), cued_runs.get(k))
        if entity is not None and _says_number(call, k):
            out.append((entity, call.by_segment[k]))  # a read-back said with the next request included
            if k in run_segments:
                until = max(until, segment.end_ms + max_answer_ms)  # the value is still being given
        elif entity is not None and (_goes_on(call, k, taken=bool(out) and out[-1][1] == call.by_segment[k - 1])
                                     or _gives(call, k, asker)):
            out.append((entity, [w for w in call.by_segment[k] if call.words[w].start_ms < until]))
        elif said is not None:
            out += [(said, call.by_segment[j]) for j in _said_before(call, k)]
        if asked in entities and not found.words[asked] & words and _answered_with_digits(call, k):
            entity, until, asker = asked, segment.end_ms + max_answer_ms, segment.speaker
        elif said is not None:
            if entity is None:
                asker = None
            entity, until = said, segment.end_ms + max_answer_ms
        if entity is not None and asked in entities:
            asker = segment.speaker
    return out


def _last_fours(call: _Call) -> list[list[int]]:
    """The LAST_FOUR_WORDS words said right after a "last four" cue ("the card ending", "ends in", "the last four";
    in the speaker's next segment too, where the cue ends one and nobody speaks between, within JOIN_GAP_MS),
    whatever was heard ("... the card ending, I know for / two," for "five oh four two", "the mean ending. / Oh, for
    Evan, Evan," for "oh four seven seven"); not a question's ("can you read me the last four?") nor what a cue
    names after "of" ("the last four of your social")."""
    out = []
    for w, word in enumerate(call.words):
        last = word.token + len(tokens(word.text)) - 1
        if last < word.token or call.cues[last] != "last4" or word.text.rstrip().endswith("?"):
            continue
        after = []
        for k in range(word.segment, min(word.segment + 2, len(call.segments))):
            if k > word.segment and (call.segments[k].speaker != call.segments[word.segment].speaker
                                     or call.segments[k].start_ms - call.segments[k - 1].end_ms > JOIN_GAP_MS):
                break
            after += [v for v in call.by_segment[k] if v > w]
        after = after[:LAST_FOUR_WORDS]
        if after and tokens(call.words[after[0]].text)[:1] != ["of"]:
            out.append(after[:next((i + 1 for i, v in enumerate(after) if "?" in call.words[v].text), None)])
    return out


def _said_before(call: _Call, si: int) -> list[int]:
    """The segments before si that a value found in si goes on from: the other speaker's turn right before where it
    says a number (the answer a read-back repeats); else its earlier groups (_groups_before)."""
    j = si - 1
    if j >= 0 and call.segments[j].speaker != call.segments[si].speaker and _says_number(call, j):
        return [j]
    return _groups_before(call, si)


def _groups_before(call: _Call, si: int) -> list[int]:
    """The same speaker's turns saying a number right before segment si, back over the other speaker's
    acknowledgements (no number, at most BACKCHANNEL_WORDS words or spelled letters: "M -M -A -K -M" for "Mm-hm"),
    within JOIN_GAP_MS: a value given in groups ("4 -I -6 -4", the first group, before "7-7-0-2")."""
    speaker, j = call.segments[si].speaker, si - 1
    out = []
    while j >= 0 and call.segments[si].start_ms - call.segments[j].end_ms <= JOIN_GAP_MS:
        if call.segments[j].speaker == speaker:
            if not _says_number(call, j):
                break
            out.append(j)
        elif _says_number(call, j) or not (len(call.by_segment[j]) <= BACKCHANNEL_WORDS or _spelled(call, j)):
            break
        j -= 1
    return out


def _goes_on(call: _Call, si: int, taken: bool) -> bool:
    """Whether segment si goes right on from the segment before it, `taken` whole, by the same speaker: one utterance
    the recogniser cut in two (the end of a read-back)."""
    return taken and _same_utterance(call, si)


def _gives(call: _Call, si: int, asker: str | None) -> bool:
    """Whether segment si is the value's giver speaking (anyone but the asker, where one asked), other than to confirm
    a read-back ("Yes that's right." after the asker's digits: a confirmation first, no digits of its own; not
    "Hermann's last went in iron.", the answer to a request the read-back ended with, garbled)."""
    speaker = call.segments[si].speaker
    if asker is None or speaker == asker:
        return False
    before = si - 1
    while before >= 0 and call.segments[before].speaker == speaker:
        before -= 1
    read_back = []  # the asker's segments right before, one turn however the recogniser cut it
    while before >= 0 and call.segments[before].speaker == asker:
        read_back.append(before)
        before -= 1
    said = _segment_tokens(call, si)
    confirms = any(_says_number(call, k) for k in read_back) and bool(said) and said[0] in CONFIRMATIONS
    return not confirms or _says_digits(call, si)


def _answered_with_digits(call: _Call, si: int) -> bool:
    """Whether the other speakers answer segment si with SHORT_RUN digits or more before its speaker says more than
    BACKCHANNEL_WORDS words ("Go ahead." while the customer finds the card)."""
    asker, said = call.segments[si].speaker, 0
    for k in range(si + 1, len(call.segments)):
        if call.segments[k].speaker == asker:
            if len(call.by_segment[k]) > BACKCHANNEL_WORDS:
                break
            continue
        said += _digits_in([t for t in _segment_tokens(call, k) if _numeric_token(t)])
    return said >= SHORT_RUN


def _says_taken(call: _Call, si: int) -> bool:
    toks = _segment_tokens(call, si)
    return any(find_words(toks, phrase) >= 0 for phrase in _TAKEN)


def _says_number(call: _Call, si: int) -> bool:
    """Whether segment si says a number: a numeric token, or words a recogniser writes for digits, two or more and
    half its words ("too flash too high" for "oh two slash two nine"; not "I want to go for a walk")."""
    toks = _segment_tokens(call, si)
    return any(map(_numeric_token, toks)) or _misheard_number(toks)


def _misheard_number(toks: list[str]) -> bool:
    """Whether tokens are words a recogniser writes for digits, two or more and half of them ("Oh, I'm time -free.")."""
    misheard = sum(1 for t in toks if t in MISHEARD_DIGITS)
    return misheard >= 2 and misheard * 2 >= len(toks)


def _numeric_token(token: str) -> bool:
    """A digit, a number word, a digit with a letter heard beside it, or a digit word made plural ("sevens")."""
    return _is_real_digit(token) or (token.endswith("s") and token[:-1] in UNITS)


def _spelled(call: _Call, si: int) -> bool:
    """Whether segment si spells something out: SPELLED_LETTERS single letters or more, half its words or more."""
    toks = _segment_tokens(call, si)
    letters = sum(1 for t in toks if _letter(t))
    return letters >= SPELLED_LETTERS and letters * 2 >= len(toks)


def _email_named(call: _Call, found: _Found, si: int) -> bool:
    """Whether an e-mail is named ("email", "e-mail address", "emailed to") or found in segment si or in one ending
    at most EMAIL_CONTEXT_MS before it: a turn spelling something out then spells the e-mail ("R, M, E, H, T, A, T,
    N, O, ..." after "The new one is ..." and "Could you spell that for me?")."""
    since = call.segments[si].start_ms - EMAIL_CONTEXT_MS
    for k in [k for k in range(si + 1) if call.segments[k].end_ms >= since]:
        toks = _segment_tokens(call, k)
        if found.words[EntityType.EMAIL] & set(call.by_segment[k]) or set(toks) & _EMAILED or \
                any(find_words(toks, phrase) >= 0 for phrase in _EMAIL_CUES):
            return True
    return False


def _email_shapes(call: _Call, found: _Found) -> list[list[int]]:
    """The words of each e-mail heard in the shape of one, however garbled: around a mail provider's name
    (_names_provider) or an address written without its "@" (_written_address), up to EMAIL_WORDS words before it
    and the domain's end after it (_domain_piece: "it'll go to noshnublub8a .gmail," for "josh w eighty-eight at
    gmail"); soon after an e-mail was named (_email_named), "at" with a domain's end up to AT_DOMAIN_WORDS words
    after it ("A P under store invoices at Lake Shore Collision .ca"; "at email" for "at gmail"), from EMAIL_WORDS
    words before it, and letters spelled out in the turn (_spelled_runs: "S-Me-Y-M-N-S-K-I."); and, soon
    after an e-mail was named, from up to EMAIL_WORDS words before a turn's first
    "dot" or "underscore" (_joins_address) to a word or two after its last, where it says two or more, or one
    before a domain's end as heard (HEARD_DOMAIN_ENDS) ("Email me or not and doctorate extra, not go not and then."
    for "olivia dot ngata at xtra dot co dot nz", "I are not medium of MWM .co .nl.", "I'll underscore if it's a bit
    too bad I come not next", "it's met on Emobria like I've not come" for "beth hollis oh three at icloud dot
    com")."""
    out = []
    for si, words in enumerate(call.by_segment):
        dots = [i for i, w in enumerate(words) if _joins_address(call.words[w].text)]
        domain = any(i + 1 < len(words) and _bare(call.words[words[i + 1]].text).lower() in HEARD_DOMAIN_ENDS
                     for i in dots)
        named = _email_named(call, found, si)
        if (len(dots) >= 2 or domain) and named:
            end = min(len(words), dots[-1] + 2)  # with the domain's last piece, or two where the first goes on
            if end < len(words) and not _ends_clause(call.words[words[end - 1]].text):
                end += 1
            out.append(words[max(0, dots[0] - EMAIL_WORDS):end])
        for i in [i for i, w in enumerate(words) if _bare(call.words[w].text).lower() == "at"]:
            domain_end = next((j for j in range(i + 1, min(len(words), i + AT_DOMAIN_WORDS + 1))
                               if _is_domain_end(call, words[j])
                               or (j == i + 1 and tokens(call.words[words[j]].text) == ["email"])), None)
            if domain_end is not None and named:
                out.append(words[max(0, i - EMAIL_WORDS):domain_end + 1])
        if named:
            out += _spelled_runs(call, words)
        for i, w in enumerate(words):
            if _names_provider(call, words, i) or _written_address(call.words[w].text):
                end = i + 1
                while end < min(len(words), i + 4) and _domain_piece(call.words[words[end]].text):
                    end += 1
                out.append(words[max(0, i - EMAIL_WORDS):end])
    return out


def _spelled_runs(call: _Call, words: list[int]) -> list[list[int]]:
    """The runs of a segment's words spelling something out inside a longer turn: SPELLED_LETTERS single letters or
    more in words that are mostly letters ("It's merit not shaman's key at email, S-Me-Y-M-N-S-K-I.")."""
    out: list[list[int]] = []
    run: list[int] = []
    for w in [*words, -1]:
        toks = tokens(call.words[w].text) if w >= 0 else []
        letters = sum(1 for t in toks if _letter(t))
        if toks and letters * 2 >= len(toks):
            run.append(w)
            continue
        if sum(1 for v in run for t in tokens(call.words[v].text) if _letter(t)) >= SPELLED_LETTERS:
            out.append(run)
        run = []
    return out


def _names_provider(call: _Call, words: list[int], i: int) -> bool:
    """Whether word i of a segment's words names a mail provider: alone ("gmail"), or at the end of the address
    heard as one word before the domain's end ("brandoncaveoutlook .com" for "Brandon K at outlook dot com")."""
    toks = tokens(call.words[words[i]].text)
    if set(toks) & MAIL_PROVIDERS:
        return True
    ends = i + 1 < len(words) and _domain_piece(call.words[words[i + 1]].text)
    return ends and any(t.endswith(provider) for t in toks for provider in MAIL_PROVIDERS)


def _written_address(text: str) -> bool:
    """Whether a word is an address written without its "@": three pieces or more joined by dots, the last a
    domain's end ("f.airman.me.internet.com." for "f dot fairbairn at btinternet dot com"; not a site, "www....")."""
    word = text.strip()
    return bool(re.fullmatch(r"\W*[^\W_][\w-]*(?:\.[\w-]+){2,}\W*", word)) and bool(_DOMAIN_END.search(word)) and \
        not word.lower().startswith("www.")


def _dot(text: str) -> bool:
    """Whether a word is an e-mail's "dot" as heard: "dot", "not", or a piece written with its dot (".co")."""
    word = text.strip()
    return _bare(word).lower() in ("dot", "not") or bool(re.match(r"\.[a-z]", word, re.I))


def _joins_address(text: str) -> bool:
    """Whether a word joins the pieces of an e-mail address as heard: a dot (_dot) or "underscore"."""
    return _dot(text) or _bare(text.strip()).lower() == "underscore"


def _domain_piece(text: str) -> bool:
    """Whether a word goes on a domain: ".com", "dot", "co", "uk" (and "not", how "dot" is often heard)."""
    return _dot(text) or _bare(text.strip()).lower() in _DOMAIN_PIECES


def _segment_tokens(call: _Call, si: int) -> list[str]:
    return [t for w in call.by_segment[si] for t in tokens(call.words[w].text)]


def _mostly_digits(call: _Call, si: int) -> bool:
    """Whether segment si is mostly digits: a value said alone ("So 2, 29.") or an agent reading one back ("that's
    4 2 4 2, 4 2 4 2?")."""
    toks = _segment_tokens(call, si)
    return sum(1 for t in toks if _digits_said(t, None) >= 0) * 2 >= len(toks) > 0


def _value_turn(call: _Call, si: int) -> bool:
    """Whether segment si says a value alone: mostly digits (or digits and spelled letters: a licence read back,
    "-R -I -D -C -I -N -E -R -1 -2 -2 -4 -O -W"), and at most OPENER_WORDS words that are none and no cue ("So 2,
    29.", "Sure, 6-6-1.", "So, X4 -I -173 -08225 -6405,"; not "The reference is oh for ate too five nine"): a run
    in it takes the whole turn."""
    if not (_mostly_digits(call, si) or _spelled(call, si)):
        return False
    words = call.by_segment[si]
    first, last = call.words[words[0]].token, call.words[words[-1]].token + len(tokens(call.words[words[-1]].text))
    return not any(call.cues[first:last]) and sum(
        1 for t in _segment_tokens(call, si) if _digits_said(t, None) < 0 and not _letter(t)) <= OPENER_WORDS


def _letter(token: str) -> bool:
    return len(token) == 1 and token.isalpha()


def _says_digits(call: _Call, si: int) -> bool:
    return any(_digits_said(t, None) >= 0 for t in _segment_tokens(call, si))


def _announces(call: _Call, si: int) -> bool:
    """Whether segment si announces its speaker's own value: "my" in its last REQUEST_TAIL tokens, and no question
    ("and my email is", "My human aim is to email." for "my email is")."""
    return "my" in _segment_tokens(call, si)[-REQUEST_TAIL:] and not call.segments[si].text.rstrip().endswith("?")


def _is_date_word(token: str, born: bool) -> bool:
    """A month or an ordinal ("september", "21st"); after a birth cue, a day's number too ("14")."""
    day = re.fullmatch(r"(\d{1,2})(st|nd|rd|th)?", token)
    return token in MONTHS or token in ORDINALS or (
        day is not None and 1 <= int(day.group(1)) <= 31 and (born or day.group(2) is not None))


def _dates(call: _Call, reference: date | None) -> list[list[int]]:
    """The words of each date said with a year that may be a birth date, however garbled the rest: a year (1900-2099,
    or two digits after a birth cue or ending a full date, from its start: _full_date_start) with a month or an
    ordinal (after a birth cue, a day's number) within DATE_REACH words before it or a month or an ordinal within
    DATE_AFTER words after it, and the year decades back (as _dates_of_birth) or a birth cue before it; from the
    first date word to the last, from the turn's start where at most OPENER_WORDS words come before (the rest of
    the date garbled: "So for, well, 1941, sorry, I mean, the Fourth of December" for "Oh four, twelve, nineteen
    forty-one. Sorry, I mean the fourth of December"), or the whole turn where that is mostly the date ("It's on
    September 1946.", "21st on August, 1988.")."""
    old = (reference.year if reference else OLD_DATE_YEAR) - 16
    out = []
    for si, words in enumerate(call.by_segment):
        said = [tokens(call.words[w].text) for w in words]
        for i, w in enumerate(words):
            born = call.cued(call.words[w].token, "dob")
            year = said[i][0] if len(said[i]) == 1 else ""
            full = _full_date_start(call, words, said, i) if re.fullmatch(r"\d\d(?:st|nd|rd|th)?", year) else None
            if not ((re.fullmatch(r"(19|20)\d\d", year) and (int(year) <= old or born)) or
                    (re.fullmatch(r"\d\d", year) and born) or full is not None):
                continue
            first = full if full is not None else next(
                (j for j in range(max(0, i - DATE_REACH), i) if any(_is_date_word(t, born) for t in said[j])), i)
            last = next((j for j in range(min(len(words), i + DATE_AFTER + 1) - 1, i, -1)
                         if any(_is_date_word(t, False) for t in said[j])), i)
            if first == last == i:
                continue
            toks = _segment_tokens(call, si)
            dated = sum(1 for t in toks if _is_date_word(t, born) or _digits_said(t, None) >= 0)
            out.append(words if dated * 2 >= len(toks) else words[0 if first <= OPENER_WORDS else first:last + 1])
    return out


def _full_date_start(call: _Call, words: list[int], said: list[list[str]], i: int) -> int | None:
    """Where a full date with a two-digit year ending at word i starts (an index in words), if one does: both a day
    and a month within DATE_REACH words before it, or a day and a month said as ordinals ("the second of the ninth")
    right before it, and the year ending what is said or, after the ordinals, right after them ("The 9th of May,
    79.", "the 12th of June, 24th" for "twelfth of June, seventy-four", "The second on the 9th, 77th,", "12th on the
    11th, 58th and the ..."; not "the 9th of May, 10 boxes", "from the 3rd of May to the 24th")."""
    ends = i + 1 == len(words) or _ends_clause(call.words[words[i]].text)
    near = range(max(0, i - DATE_REACH), i)
    before = [t for j in near for t in said[j]]
    if ends and any(t in MONTHS for t in before) and any(_ordinal(t) for t in before):
        return next(j for j in near if any(_is_date_word(t, False) for t in said[j]))
    # "the 2nd of the 9th": four words, each one token
    for j in range(max(0, i - DATE_REACH - 2), i - 3):
        day, joint, the, month = (said[k][0] if len(said[k]) == 1 else "" for k in range(j, j + 4))
        if _ordinal(day) and joint in ("of", "on") and the == "the" and 1 <= _ordinal(month) <= 12 and \
                (ends or j + 4 == i):
            return j
    return None


def _ordinal(token: str) -> int:
    """The number an ordinal says ("ninth", "9th": 9), 0 for any other token."""
    written = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)", token)
    return int(written.group(1)) if written else ORDINALS.get(token, 0)


def _expiries(call: _Call) -> list[list[int]]:
    """The words of each month said with a number ("August 28th", "April 29"), in a segment that says little else
    (OPENER_WORDS), within EXPIRY_CONTEXT_MS after a card was named (a card, its code, its expiry or its last four):
    an expiry, however garbled its question was ("and when the number backpire," before "and on August 28th."; not
    "it will ship by March 5th.")."""
    named = [call.words[call.token_word[t]].end_ms for t, kind in enumerate(call.cues) if kind in _CARD_CUES]
    out = []
    for si, words in enumerate(call.by_segment):
        toks = _segment_tokens(call, si)
        if not named or len(toks) - 2 > OPENER_WORDS:  # the month and its number, and little else
            continue
        for i, w in enumerate(words):
            if not set(tokens(call.words[w].text)[:1]) & set(MONTHS):
                continue
            number = next((j for j in range(i + 1, min(i + 3, len(words)))
                           if re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)?", "".join(tokens(call.words[words[j]].text)))),
                          None)
            start = call.words[w].start_ms
            if number is not None and any(start - EXPIRY_CONTEXT_MS <= end <= start for end in named):
                out.append(words[i:number + 1])
    return out


def _strict(call: _Call, found: _Found, wanted: list[EntityType], language: str | None, max_answer_ms: int,
            embedder: Any = None, reference: date | None = None) -> None:
    """Strict mode's spans, beside the rules': answers to requests (found by their words, and by their meaning
    where a text embedder is given), the turns that say a number while a value is given, dates that may be birth
    dates, runs of digits (a turn that is mostly one: whole; with the groups said alone before it, and their digits
    said again later: _repeats_of), the words right after "the card ending", the words around a span heard with a
    low probability (not around a run an "other" cue names right before it: "your claim number is 4,4001,291"),
    and the digits going right on from a segment taken whole. A word already found keeps its entity."""
    taken = set().union(*found.words.values())
    numeric = [e for e in _NUMERIC if e in wanted]
    meant = requests_by_meaning(call.segments, embedder, language) if embedder is not None else None
    requests = _requests(call, language, meant)
    adds = _requested_answers(call, found, wanted, requests, max_answer_ms)
    runs = [(run, _CUE_ENTITY.get(call.nearest_cue(call.words[run[0]].token) or ""))
            for run in (_digit_runs(call) if numeric else [])]
    digit_groups = _digit_groups(call) if runs else []
    windowed = [e for e in WINDOWED if e in wanted]
    cued_runs = {call.words[run[0]].segment: entity for run, cue in runs
                 if (entity := _run_names(call, run, cue)) in windowed}
    adds += [(entity, words, "value_window")
             for entity, words in _value_windows(call, found, requests, cued_runs,
                                                 {call.words[w].segment for run, _ in runs for w in run}, windowed,
                                                 max_answer_ms)]
    if EntityType.DATE_OF_BIRTH in wanted:
        adds += [(EntityType.DATE_OF_BIRTH, words, "digit_run") for words in _dates(call, reference)]
    if EntityType.PAYMENT_CARD in wanted:
        adds += [(EntityType.PAYMENT_CARD, words, "digit_run") for words in [*_expiries(call), *_last_fours(call)]]
    if EntityType.EMAIL in wanted:
        adds += [(EntityType.EMAIL, call.by_segment[si], "spelled") for si in range(len(call.segments))
                 if _spelled(call, si) and _email_named(call, found, si)]
        adds += [(EntityType.EMAIL, words, "email_shape") for words in _email_shapes(call, found)]
    plain: set[int] = set()
    for run, cue in runs:
        segments = {call.words[w].segment for w in run}
        groups = [w for si in _groups_before(call, min(segments)) if _value_turn(call, si) for w in call.by_segment[si]]
        words = sorted({*run, *groups, *(w for si in segments if _value_turn(call, si) for w in call.by_segment[si])})
        entity = cue if cue in numeric else numeric[0]
        adds.append((entity, words, "digit_run"))
        if call.nearest_cue(call.words[run[0]].token, NAMED_BY) == "other":
            plain.update(words)
        else:
            adds += [(entity, again, "digit_run") for again in _repeats_of(call, run, digit_groups)]
    for entity, words, by in adds:
        words = [w for w in words if w not in taken]
        found.add_words(words, entity, by)
        taken.update(words)
    # widen around low-probability words: where the recogniser was unsure, the value may reach further than heard,
    # into the speaker's turn on either side of a pause Whisper cut it at ("66 to Nero," / "So," for "six six two
    # zero") (not names and addresses: a name is often heard unsure, and neither is read as digits)
    for entity in [e for e in wanted if e in _NUMERIC or e == EntityType.EMAIL]:
        for w in sorted(found.words[entity] - plain):
            word = call.words[w]
            near = [v for v in _turn_words(call, word.segment) if v not in taken
                    and call.words[v].end_ms > word.start_ms - LOW_PROBABILITY_MARGIN_MS
                    and call.words[v].start_ms < word.end_ms + LOW_PROBABILITY_MARGIN_MS]
            if near and min(_probability(call, v) for v in [w, *near]) < LOW_PROBABILITY:
                found.add_words(near, entity, "low_confidence")
                taken.update(near)
    # a segment taken whole that the speaker's next goes right on from, saying SHORT_RUN digits or more, or mostly
    # words heard for digits: one utterance the recogniser cut ("Just the last four women been in time, but thank
    # you." / "Oh, I'm time -free."; not "It will be there in three days.")
    for si in range(1, len(call.segments)):
        said = _segment_tokens(call, si)
        if not (_same_utterance(call, si) and (
                _digits_in([t for t in said if _numeric_token(t)]) >= SHORT_RUN or _misheard_number(said))):
            continue
        for entity in numeric:
            if set(call.by_segment[si - 1]) <= found.words[entity]:
                words = [w for w in call.by_segment[si] if w not in taken]
                found.add_words(words, entity, "digit_run")
                taken.update(words)


def _repeats_of(call: _Call, run: list[int], groups: list[tuple[int, list[int], str]]) -> list[list[int]]:
    """The groups of digits (_digit_groups) said after a run, by either side, that repeat SHORT_RUN or more of its
    digits in order, however little of them either time was heard: its read-back ("1, 2, 3, and the account number"
    after "Mirafix 4, 1, 2, 3." for "Zero six four, one two three"), the card's last four where the payment is
    confirmed ("028 I'm in the month number ..." after "... 4, 6, 1, 0, 2, 9, no wait, 0, 2, 8, 9.")."""
    digits, after = _digits_of(call, run), call.words[run[-1]].segment
    return [words for si, words, said in groups if si > after and len(said) >= SHORT_RUN and said in digits]


def _digit_groups(call: _Call) -> list[tuple[int, list[int], str]]:
    """(segment, words, digits) of each group of consecutive words saying digits only (no word heard for one, not
    an amount or a time), read once per call for every run's repeats."""
    out = []
    for si, words in enumerate(call.by_segment):
        group: list[int] = []
        for w in [*words, -1]:
            toks = tokens(call.words[w].text) if w >= 0 else []
            if toks and all(_digits_said(t, None) >= 0 and t not in MISHEARD_DIGITS for t in toks):
                group.append(w)
                continue
            if group and not _amount_or_time(" ".join(call.words[g].text for g in group)):
                out.append((si, group, _digits_of(call, group)))
            group = []
    return out


def _digits_of(call: _Call, words: list[int]) -> str:
    """The digits words say, in order ("4, 1, 2, 3.": "4123")."""
    return "".join(g for run in digit_runs(" ".join(call.words[w].text for w in words)) for g in run.groups)


def _turn_words(call: _Call, si: int) -> list[int]:
    """The words of segment si and of the same speaker's segments right before and after it (one turn)."""
    speaker = call.segments[si].speaker
    return [w for sj in (si - 1, si, si + 1) if 0 <= sj < len(call.segments) and call.segments[sj].speaker == speaker
            for w in call.by_segment[sj]]


def _probability(call: _Call, w: int) -> float:
    word = call.words[w]
    words = call.segments[word.segment].words
    return words[word.index].probability if words else 1.0


def find_spans(segments: Sequence[TranscriptSegment], entities: Iterable[EntityType | str] = ENTITY_TYPES,
               region: str = "US", reference: date | None = None, mode: Mode | str = Mode.PRECISE,
               language: str | None = None, max_answer_ms: int = ANSWER_SECONDS_DEFAULT * 1000,
               embedder: Any = None) -> list[RedactedSpan]:
    """The spans of segments that say each of entities (see the module docstring), in transcript order.
    reference: the call's date, when known (a date after it is no birth date). mode strict adds _strict's spans
    (requests in language, English always; by meaning too where `embedder`, a text embedder, is given)."""
    wanted = [EntityType(e) for e in entities]
    call = _Call(segments)
    found = _Found(call)
    # Order matters: what is found first takes its characters (an e-mail's digits are no phone number).
    for thread in call.threads:
        _emails(found, thread)
    for thread in call.threads:
        _dates_of_birth(call, found, thread, region, reference)
    for thread in call.threads:
        _alnum(call, found, thread)
    _answers(call, found)
    for thread in call.threads:
        _Digits(call, found, thread, region).classify()
    _read_backs(call, found)
    if EntityType.PERSON_NAME in wanted:
        _names(call, found)
    if EntityType.ADDRESS in wanted:
        _addresses(call, found)
    if Mode(mode) == Mode.STRICT:
        _strict(call, found, wanted, language, max_answer_ms, embedder, reference)
    return found.spans(wanted)


# --- the step: the transcript with the spans taken out ---------------------------------------------------


def token(entity: EntityType | str) -> str:
    """What a redacted span reads as in the text: ``[PAYMENT_CARD]``."""
    return f"[{EntityType(entity).value.upper()}]"


_TOKENS = {token(e): e for e in EntityType}
_TRAILING = ".,;:?!"


@dataclass(frozen=True)
class Redaction:
    """A transcript with the requested entities taken out, and what the fields rule needs (kept in memory only,
    never in the result): each card span's last four digits, where the whole number is known."""

    segments: list[TranscriptSegment]
    summary: RedactionSummary
    spans: list[RedactedSpan]
    card_last_four: dict[tuple[int, int], str]  # (segment index, first word) -> "1234"
    said: tuple[tuple[EntityType, str], ...]  # each span's value, as its letters and digits (lower case)


def _compact(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _span_text(segment: TranscriptSegment, span: RedactedSpan) -> str:
    return " ".join(text for text, _, _ in _segment_words(segment)[span.first_word:span.last_word + 1])


def _redacted_segment(segment: TranscriptSegment, spans: list[RedactedSpan]) -> TranscriptSegment:
    """segment with each span's words read as one token: in the text, the first word's text becomes the token
    (keeping the last word's closing punctuation), the span's other words become empty; each word keeps its times
    and says redacted and its entity."""
    parts = [text for text, _, _ in _segment_words(segment)]
    by_word: dict[int, tuple[RedactedSpan, bool]] = {}
    for span in spans:
        for w in range(span.first_word, span.last_word + 1):
            by_word[w] = (span, w == span.first_word)
    replaced: list[str] = []
    for w, part in enumerate(parts):
        if w not in by_word:
            replaced.append(part)
            continue
        span, first = by_word[w]
        last = parts[span.last_word]
        tail = last[len(last.rstrip(_TRAILING)):] if last.rstrip(_TRAILING) else ""
        replaced.append(token(span.entity) + tail if first else "")
    text = " ".join(p for p in replaced if p)
    if not segment.words:
        return segment.model_copy(update={"text": text})
    words = []
    for w, word in enumerate(segment.words):
        if w not in by_word:
            words.append(word)
            continue
        lead = word.text[:len(word.text) - len(word.text.lstrip())]
        span, first = by_word[w]
        words.append(word.model_copy(update={"text": lead + replaced[w] if first else "", "redacted": True,
                                             "entity": span.entity.value}))
    return segment.model_copy(update={"text": text, "words": words})


def _card_last_four(segments: Sequence[TranscriptSegment], spans: list[RedactedSpan]) -> dict[tuple[int, int], str]:
    """The last four digits of each card span whose whole number is known: its own digits, or with the card spans
    of the same speaker after it (a number said across segments), when they make a card number. A span of a part of
    a number, or of an expiry or security code alone, gets none."""
    cards = [s for s in spans if s.entity == EntityType.PAYMENT_CARD]
    out: dict[tuple[int, int], str] = {}
    for i, span in enumerate(cards):
        if (span.segment, span.first_word) in out:
            continue
        group, digits = [], ""
        for other in cards[i:]:
            if segments[other.segment].speaker != segments[span.segment].speaker:
                continue
            group.append(other)
            said = "".join(run.digits for run in digit_runs(_span_text(segments[other.segment], other)))
            digits += said
            number = next((digits[:n] for n in range(min(19, len(digits)), 12, -1) if is_card_number(digits[:n])),
                          None)
            if number is not None:
                for member in group:
                    out[(member.segment, member.first_word)] = number[-4:]
                break
            if len(digits) > 23:  # a card and its expiry and code at most
                break
    return out


def redact(segments: Sequence[TranscriptSegment], entities: Iterable[EntityType | str], region: str = "US",
           reference: date | None = None, mode: Mode | str = Mode.PRECISE, language: str | None = None,
           max_answer_ms: int = ANSWER_SECONDS_DEFAULT * 1000, embedder: Any = None,
           speech: list[SpeechRegion] | None = None) -> Redaction:
    """The transcript with the spans of entities (find_spans) taken out: see _redacted_segment; the summary counts
    the spans of each requested type (no values) and says the mode. In strict mode with the call's `speech`
    regions, it also lists the speech the transcript has no words for (timing.unheard): a value said there
    (a card's expiry Whisper skipped) is in no word, so only its audio can be taken out."""
    wanted = list(dict.fromkeys(EntityType(e) for e in entities))
    spans = find_spans(segments, wanted, region=region, reference=reference, mode=mode, language=language,
                       max_answer_ms=max_answer_ms, embedder=embedder)
    per_segment: dict[int, list[RedactedSpan]] = {}
    for span in spans:
        per_segment.setdefault(span.segment, []).append(span)
    out = [_redacted_segment(s, per_segment[i]) if i in per_segment else s for i, s in enumerate(segments)]
    counts = {e.value: sum(1 for s in spans if s.entity == e) for e in wanted}
    found_by = {e.value: {by: sum(1 for s in spans if s.entity == e and by in s.found_by) for by in FOUND_BY}
                for e in wanted}
    said = tuple((s.entity, _compact(_span_text(segments[s.segment], s))) for s in spans)
    return Redaction(segments=out, summary=RedactionSummary(entities=[e.value for e in wanted], counts=counts,
                                                            mode=Mode(mode).value, found_by=found_by,
                                                            unheard=unheard(list(segments), speech)
                                                            if speech and mode == Mode.STRICT else []),
                     spans=spans, card_last_four=_card_last_four(segments, spans),
                     said=tuple((e, v) for e, v in said if v))


def _shown(value: str, redaction: Redaction, segment_index: int | None) -> str:
    """value with each token left as the rules allow: a card's, where its number is known, as "**** 1234"."""
    def card(match: re.Match[str]) -> str:
        found = {last for (si, _), last in redaction.card_last_four.items()
                 if segment_index is None or si == segment_index}
        return f"**** {found.pop()}" if len(found) == 1 else match.group()  # which card, when several: unknown
    return re.sub(re.escape(token(EntityType.PAYMENT_CARD)), card, value)


def redact_fields(values: Sequence[ExtractedValue], redaction: Redaction) -> list[ExtractedValue]:
    """Extracted values that fall in a redacted span keep only what the rules allow: a card its last four digits
    ("**** 1234"), any other entity its token. The fields read the redacted transcript, so such a value reads as a
    token (a card's becomes its last four); a value that still says a redacted value (its letters and digits) is
    replaced by its token."""
    index = {s.id: i for i, s in enumerate(redaction.segments)}
    out = []
    for value in values:
        v = value.value
        if isinstance(v, bool) or v is None:
            out.append(value)
            continue
        text = f"{v:g}" if isinstance(v, float) else str(v)
        compact = _compact(text)
        leaked = next((e for e, said in redaction.said if len(said) >= 4 and (said in compact or (
            len(compact) >= 4 and compact in said))), None)
        if leaked is not None:
            text = token(leaked)
        segment = index.get(value.evidence[0].dialogue_id) if value.evidence else None
        shown = _shown(text, redaction, segment)
        out.append(value if leaked is None and shown == text else value.model_copy(update={"value": shown}))
    return out
