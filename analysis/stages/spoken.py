"""Spoken forms in transcript text: digits, numbers, phone numbers, e-mail addresses and dates said in words (or
written), found in a segment with where they are said (`Mention`). The fields stage (fields.py) chooses among them.

Spoken forms are converted before anything is validated ("five five five, one two three four" -> "555 1234",
"john dot smith at example dot com"); `phone_mentions` keeps valid numbers as E.164 (`phonenumbers`, in `region`),
`email_mentions` addresses matching ``EMAIL``, `date_mentions` dates (relative ones only with a `reference`),
`number_mentions` floats. The rules: docs/analysis.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import phonenumbers

from callscope.analysis.result import Evidence, TranscriptSegment
from callscope.analysis.stages.evidence import excerpt, token_spans, word_time

UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
TEENS = {w: i + 10 for i, w in enumerate(
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
TENS = {w: (i + 2) * 10 for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
ORDINALS = {w: i + 1 for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth".split())} | {"twentieth": 20, "thirtieth": 30}
MONTHS = {name: i + 1 for i, name in enumerate(
    "january february march april may june july august september october november december".split())}
MONTHS |= {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
           "oct": 10, "nov": 11, "dec": 12}
WEEKDAYS = {name: i for i, name in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
NUMBER_WORDS = set(UNITS) | set(TEENS) | set(TENS) | {"hundred"} | set(SCALES)

EMAIL = re.compile(r"^(?!.*\.\.)[a-z0-9](?:[a-z0-9._%+-]{0,62}[a-z0-9])?@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+"
                   r"[a-z]{2,24}$")
_EMAIL_CONNECTORS = {"dot": ".", "underscore": "_", "dash": "-", "hyphen": "-", ".": ".", "_": "_", "-": "-"}
# Words before "at" that are speech, not the local part of an address ("look at google dot com").
_NOT_LOCAL = set("""me us it is was be been look looking him her them you i we they that this there here home work
least all once first last back call email mail reach send sent write it's that's me's""".split())
_DAY_FIRST_REGIONS = {"US": False, "CA": False}


# --- spoken digits -----------------------------------------------------------------------------------

_LEX = re.compile(r"\d+|[^\W\d_]+(?:'[^\W\d_]+)?")


@dataclass(frozen=True)
class Lexeme:
    word: str  # lowercase
    start: int
    end: int


def lex(text: str) -> list[Lexeme]:
    return [Lexeme(m.group().lower(), m.start(), m.end()) for m in _LEX.finditer(text.replace("’", "'"))]


@dataclass(frozen=True)
class DigitRun:
    """Digits said one after another: their groups ("555", "1234") and where they are in the text."""

    groups: tuple[str, ...]
    start: int
    end: int
    plus: bool  # "+" or "plus" right before it

    @property
    def digits(self) -> str:
        return "".join(self.groups)


def digit_value(lexemes: list[Lexeme], i: int) -> tuple[str, int] | None:
    """The digits lexeme i says and how many lexemes that takes; None when it says no digits."""
    word = lexemes[i].word
    nxt = lexemes[i + 1].word if i + 1 < len(lexemes) else ""
    if word.isdigit():
        if nxt == "hundred":
            return word + "00", 2
        return word, 1
    if word in ("double", "triple") and i + 1 < len(lexemes):
        inner = digit_value(lexemes, i + 1)
        if inner and len(inner[0]) == 1 and inner[1] == 1:
            return inner[0] * (2 if word == "double" else 3), 2
        return None
    if word in UNITS:
        return (str(UNITS[word]) + "00", 2) if nxt == "hundred" else (str(UNITS[word]), 1)
    if word in ("oh", "o"):
        return "0", 1
    if word in TEENS:
        return str(TEENS[word]), 1
    if word in TENS:
        if nxt in UNITS and nxt != "zero":
            return str(TENS[word] + UNITS[nxt]), 2
        return str(TENS[word]), 1
    return None


_RUN_SEPARATOR = re.compile(r"^[\s,.\-–—/()]*$")


def digit_runs(text: str) -> list[DigitRun]:
    """Every run of digits in text, spoken or written (see the module docstring)."""
    lexemes = lex(text)
    runs: list[DigitRun] = []
    i = 0
    while i < len(lexemes):
        first = digit_value(lexemes, i)
        if first is None or (lexemes[i].word in ("oh", "o") and not _zero(lexemes, i, text)):
            i += 1
            continue
        groups, start, j = [first[0]], lexemes[i].start, i + first[1]
        spoken_prev = not lexemes[i].word.isdigit()
        end = lexemes[j - 1].end
        while j < len(lexemes):
            gap = text[end:lexemes[j].start]
            value = digit_value(lexemes, j)
            if value is None or not _RUN_SEPARATOR.match(gap):
                break
            if lexemes[j].word in ("oh", "o") and not (_zero(lexemes, j, text) or (spoken_prev and not gap.strip())):
                break  # "... one. Oh, and" is not a zero
            spoken = not lexemes[j].word.isdigit()
            if gap.strip() or not (spoken and spoken_prev):
                groups.append(value[0])  # a comma or a dash, or written digits: a new group
            else:
                groups[-1] += value[0]
            spoken_prev, end, j = spoken, lexemes[j + value[1] - 1].end, j + value[1]
        before = text[:start].rstrip()
        plus = before.endswith("+") or (i > 0 and lexemes[i - 1].word == "plus")
        runs.append(DigitRun(tuple(groups), start, end, plus))
        i = j
    return runs


def _zero(lexemes: list[Lexeme], i: int, text: str) -> bool:
    """Whether the "oh" at lexeme i is a zero: two or more in a row, or one followed by another digit."""
    j = i
    while (j + 1 < len(lexemes) and lexemes[j + 1].word in ("oh", "o")
           and text[lexemes[j].end:lexemes[j + 1].start] == " "):
        j += 1
    if j > i:
        return True
    return j + 1 < len(lexemes) and digit_value(lexemes, j + 1) is not None and \
        bool(_RUN_SEPARATOR.match(text[lexemes[j].end:lexemes[j + 1].start]))


def spoken_digits(text: str) -> str:
    """text with each run of two or more spoken digits written as digits: "five five five, one two three four"
    -> "555 1234"."""
    out, last = [], 0
    for run in digit_runs(text):
        said = lex(text[run.start:run.end])
        if len(said) < 2 and not any(w.word in ("double", "triple") for w in said):
            continue
        out.append(text[last:run.start] + " ".join(run.groups))
        last = run.end
    return "".join(out) + text[last:]


# --- spoken numbers ----------------------------------------------------------------------------------


def parse_cardinal(words: Sequence[str]) -> float | None:
    """The value of number words ("one hundred and fifty", "three point five", "minus two"); None when they do
    not form one number ("five five", which spoken_number reads as digits)."""
    words = [w for w in words if w != "and"]
    sign = -1 if words and words[0] in ("minus", "negative") else 1
    words = words[1:] if sign < 0 else words
    if "point" in words:
        cut = words.index("point")
        whole = parse_cardinal(words[:cut]) if cut else 0.0
        decimals = "".join(str(UNITS[w]) if w in UNITS else w if w.isdigit() else "?" for w in words[cut + 1:])
        if whole is None or not decimals or "?" in decimals:
            return None
        return sign * (whole + float("0." + decimals))
    total, current, last = 0.0, 0.0, None
    for w in words:
        if w == "a" and last is None:
            current, last = 1, "unit"
        elif re.fullmatch(r"\d+(?:\.\d+)?", w) and last is None:
            current, last = float(w), "numeral"
        elif w in UNITS or w in TEENS:
            if last in ("unit", "teen", "numeral") or (last == "tens" and w in TEENS):
                return None
            current, last = current + UNITS.get(w, TEENS.get(w, 0)), "unit" if w in UNITS else "teen"
        elif w in TENS:
            if last in ("unit", "teen", "tens", "numeral"):
                return None
            current, last = current + TENS[w], "tens"
        elif w == "hundred":
            if last == "hundred" or (current % 100 == 0 and current):
                return None
            current, last = (current or 1) * 100, "hundred"
        elif w in SCALES:
            if last in (None, "scale"):
                return None
            total, current, last = total + (current or 1) * SCALES[w], 0, "scale"
        else:
            return None
    return None if last is None else float(sign * (total + current))


def spoken_number(words: Sequence[str]) -> float | None:
    """A number said in words or digits: cardinal ("twenty five") or digit by digit ("four five six seven")."""
    value = parse_cardinal(words)
    if value is not None:
        return value
    lexemes = [Lexeme(w, 0, 0) for w in words]
    digits, i = "", 0
    while i < len(lexemes):
        piece = digit_value(lexemes, i)
        if piece is None:
            return None
        digits, i = digits + piece[0], i + piece[1]
    return float(digits) if digits else None


_NUMERAL = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_NUMBER_LEX = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?(?:st|nd|rd|th)?|[^\W\d_]+(?:'[^\W\d_]+)?")


@dataclass(frozen=True)
class Mention:
    """A value found in a segment, where it is said (characters of segment.text)."""

    value: Any
    segment: TranscriptSegment
    start: int
    end: int

    @property
    def first_word(self) -> int:
        return next((i for i, (_, s, e) in enumerate(token_spans(self.segment.text)) if e > self.start), 0)

    @property
    def word_count(self) -> int:
        return max(1, sum(1 for _, s, e in token_spans(self.segment.text) if s < self.end and e > self.start))

    def evidence(self) -> Evidence:
        quote, _ = excerpt(self.segment, self.first_word, self.word_count)
        return Evidence(dialogue_id=self.segment.id, start_ms=word_time(self.segment, self.first_word), quote=quote)


def _is_number_word(lexemes: list[Lexeme], i: int) -> bool:
    w = lexemes[i].word
    prev = lexemes[i - 1].word if i else ""
    nxt = lexemes[i + 1].word if i + 1 < len(lexemes) else ""
    if w in NUMBER_WORDS or _NUMERAL.match(w):
        return True
    if w == "and":
        return prev in ("hundred", *SCALES) and nxt in NUMBER_WORDS
    if w == "point":
        return bool(prev) and (prev in NUMBER_WORDS or prev.isdigit()) and (nxt in UNITS or nxt.isdigit())
    if w == "a":
        return nxt in ("hundred", *SCALES)
    if w in ("minus", "negative"):
        return nxt in NUMBER_WORDS or bool(_NUMERAL.match(nxt))
    return w in ("oh", "double", "triple") and (nxt in UNITS or prev in UNITS)


_ONE_BEFORE = set("the this that other which each every any no another a last first next only same right wrong new "
                  "old big small little".split())
_ONE_AFTER = set("moment sec second minute more of thing time day".split())


def _pronoun_one(lexemes: list[Lexeme], i: int) -> bool:
    """A lone "one" that is a word, not a number: "the other one", "one moment"."""
    before = lexemes[i - 1].word if i else ""
    after = lexemes[i + 1].word if i + 1 < len(lexemes) else ""
    return before in _ONE_BEFORE or after in _ONE_AFTER


def number_mentions(segment: TranscriptSegment) -> list[Mention]:
    """Every number said in segment (ordinals such as "3rd" are not numbers here)."""
    text = segment.text.replace("’", "'")
    lexemes = [Lexeme(m.group().lower(), m.start(), m.end()) for m in _NUMBER_LEX.finditer(text)]
    out, i = [], 0
    while i < len(lexemes):
        if not _is_number_word(lexemes, i):
            i += 1
            continue
        j = i + 1
        while j < len(lexemes) and _is_number_word(lexemes, j) and re.fullmatch(r"[\s-]*", text[lexemes[j - 1].end:
                                                                                             lexemes[j].start]):
            j += 1
        words = [lx.word.replace(",", "") for lx in lexemes[i:j]]
        if words == ["one"] and _pronoun_one(lexemes, i):
            i = j
            continue
        value = spoken_number(words)
        if value is not None:
            out.append(Mention(value, segment, lexemes[i].start, lexemes[j - 1].end))
        i = j
    return out


# --- phone numbers and e-mail addresses ------------------------------------------------------------


def phone_mentions(segment: TranscriptSegment, region: str = "US") -> list[Mention]:
    """Valid phone numbers said in segment, as E.164."""
    out = []
    for run in digit_runs(segment.text):
        if len(run.digits) < 7:
            continue
        numbers = []
        try:
            whole = phonenumbers.parse(("+" if run.plus else "") + run.digits, region)
            if phonenumbers.is_valid_number(whole):
                numbers = [whole]
        except phonenumbers.NumberParseException:
            pass
        if not numbers:  # more digits than one number: look for valid numbers inside the groups
            numbers = [m.number for m in phonenumbers.PhoneNumberMatcher(
                " ".join(run.groups), region, leniency=phonenumbers.Leniency.VALID)]
        for number in numbers:
            out.append(Mention(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164), segment,
                               run.start, run.end))
    return out


_EMAIL_LEX = re.compile(r"[^\W_]+|[@._-]")


def _email_tokens(text: str) -> list[Lexeme]:
    """Words and the characters of a written address. A "." "_" or "-" counts only inside a word
    ("john.smith"); elsewhere it is a break ("|"). Digits said one by one are one word ("one two three" ->
    "123"), and so are letters spelled one by one ("j o h n" -> "john"). Spans are in text."""
    runs = [r for r in digit_runs(text) if len(lex(text[r.start:r.end])) > 1]
    raw: list[Lexeme] = []
    for m in _EMAIL_LEX.finditer(text):
        run = next((r for r in runs if r.start <= m.start() < r.end), None)
        if run is not None:
            if not raw or raw[-1].start != run.start:
                raw.append(Lexeme(run.digits, run.start, run.end))
            continue
        word = m.group().lower()
        if word in "._-":
            inside = m.start() > 0 and m.end() < len(text) and text[m.start() - 1].isalnum() and text[m.end()].isalnum()
            word = word if inside else "|"
        raw.append(Lexeme(word, m.start(), m.end()))
    out: list[Lexeme] = []
    for lx in raw:
        # the previous word is letters spelled one by one (one space apart), and so is this one
        spelled = (out and len(lx.word) == 1 and lx.word.isalpha() and out[-1].word.isalpha()
                   and out[-1].end - out[-1].start == 2 * len(out[-1].word) - 1 and text[out[-1].end:lx.start] == " ")
        if spelled:
            out[-1] = Lexeme(out[-1].word + lx.word, out[-1].start, lx.end)
        else:
            out.append(lx)
    return out


def _is_name(lexemes: list[Lexeme], k: int) -> bool:
    return 0 <= k < len(lexemes) and lexemes[k].word.isalnum() and lexemes[k].word not in _EMAIL_CONNECTORS \
        and lexemes[k].word not in ("at", "@")


def _email_part(lexemes: list[Lexeme], i: int, step: int) -> tuple[str, int] | None:
    """The address part that ends (step -1) or starts (step 1) at lexeme i: words joined by connectors; and
    the index of its far end."""
    if not _is_name(lexemes, i):
        return None
    parts, k = [lexemes[i].word], i
    while True:
        if step < 0 and parts[0].isdigit() and _is_name(lexemes, k - 1) and lexemes[k - 1].word.isalpha():
            parts, k = [lexemes[k - 1].word, *parts], k - 1  # "lee one two three at" -> lee123
        elif _is_name(lexemes, k + 2 * step) and lexemes[k + step].word in _EMAIL_CONNECTORS:
            symbol, word = _EMAIL_CONNECTORS[lexemes[k + step].word], lexemes[k + 2 * step].word
            parts = [word, symbol, *parts] if step < 0 else [*parts, symbol, word]
            k += 2 * step
        else:
            return "".join(parts), k


def email_mentions(segment: TranscriptSegment) -> list[Mention]:
    """Valid e-mail addresses said or written in segment."""
    lexemes = _email_tokens(segment.text)
    out = []
    for i, lx in enumerate(lexemes):
        if lx.word not in ("at", "@"):
            continue
        local, domain = _email_part(lexemes, i - 1, -1), _email_part(lexemes, i + 1, 1)
        if local is None or domain is None or "." not in domain[0] or local[0] in _NOT_LOCAL:
            continue
        address = f"{local[0]}@{domain[0]}"
        if EMAIL.match(address):
            out.append(Mention(address, segment, lexemes[local[1]].start, lexemes[domain[1]].end))
    return out


# --- dates --------------------------------------------------------------------------------------------

_DATE_LEX = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|\d+(?:st|nd|rd|th)?|[^\W\d_]+")


def _day_at(lx: list[Lexeme], i: int) -> tuple[int, int] | None:
    """A day of the month said at lexeme i ("5", "5th", "fifth", "twenty first", "twenty-one") and its length."""
    if i >= len(lx):
        return None
    w = lx[i].word
    m = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", w)
    if m:
        return int(m.group(1)), 1
    nxt = lx[i + 1].word if i + 1 < len(lx) else ""
    if w in ("twenty", "thirty") and ((nxt in ORDINALS and ORDINALS[nxt] < 10) or (nxt in UNITS and nxt != "zero")):
        return TENS[w] + ORDINALS.get(nxt, UNITS.get(nxt, 0)), 2
    if w in ORDINALS:
        return ORDINALS[w], 1
    if w in UNITS or w in TEENS or w in TENS:
        return UNITS.get(w, TEENS.get(w, TENS.get(w, 0))), 1
    return None


def _year_at(lx: list[Lexeme], i: int) -> tuple[int, int] | None:
    """A year 1900-2099 said at lexeme i ("2024", "twenty twenty four", "two thousand and five") and its length."""
    if i < len(lx) and re.fullmatch(r"\d{4}", lx[i].word):
        year = int(lx[i].word)
        return (year, 1) if 1900 <= year <= 2099 else None
    for n in range(min(6, len(lx) - i), 1, -1):
        words = [x.word for x in lx[i:i + n]]
        if not all(w in NUMBER_WORDS or w == "and" for w in words):
            continue
        value = spoken_number(words)
        if value is not None and 1900 <= value <= 2099 and value == int(value):
            return int(value), n
    return None


def _make(year: int | None, month: int, day: int, reference: date | None) -> date | None:
    if year is None:
        if reference is None:
            return None  # no year and nothing to anchor one
        year = reference.year
    try:
        return date(year, month, day)
    except ValueError:
        return None


_FUTURE = ("next", "this", "on", "coming", "by", "until", "till")
_PAST = ("last", "since")


def _relative(lx: list[Lexeme], i: int, reference: date) -> tuple[date, int] | None:
    w = lx[i].word
    words = [x.word for x in lx[i:i + 4]]
    if words[:4] == ["the", "day", "after", "tomorrow"] or words[:3] == ["day", "after", "tomorrow"]:
        return reference + timedelta(days=2), 4 if words[0] == "the" else 3
    if words[:4] == ["the", "day", "before", "yesterday"] or words[:3] == ["day", "before", "yesterday"]:
        return reference - timedelta(days=2), 4 if words[0] == "the" else 3
    if w in ("today", "tonight"):
        return reference, 1
    if w == "tomorrow":
        return reference + timedelta(days=1), 1
    if w == "yesterday":
        return reference - timedelta(days=1), 1
    # a weekday only with a word that says which one: "next Friday", "by Monday", "since Tuesday"
    if w in _FUTURE + _PAST and i + 1 < len(lx) and lx[i + 1].word in WEEKDAYS:
        ahead = (WEEKDAYS[lx[i + 1].word] - reference.weekday()) % 7 or 7
        return (reference - timedelta(days=7 - ahead) if w in _PAST else reference + timedelta(days=ahead)), 2
    if w == "in" and i + 2 < len(lx) and lx[i + 2].word in ("day", "days", "week", "weeks"):
        count = spoken_number([lx[i + 1].word]) if lx[i + 1].word not in ("a", "one") else 1.0
        if count is not None and count == int(count):
            days = int(count) * (7 if lx[i + 2].word.startswith("week") else 1)
            return reference + timedelta(days=days), 3
    if i + 2 < len(lx) and lx[i + 1].word in ("day", "days", "week", "weeks") and lx[i + 2].word == "ago":
        count = spoken_number([w]) if w not in ("a", "one") else 1.0
        if count is not None and count == int(count):
            days = int(count) * (7 if lx[i + 1].word.startswith("week") else 1)
            return reference - timedelta(days=days), 3
    return None


def date_mentions(segment: TranscriptSegment, reference: date | None = None, region: str = "US") -> list[Mention]:
    """Dates said in segment, as datetime.date (see the module docstring for the forms and the anchoring)."""
    text = segment.text.replace("’", "'")
    lx = [Lexeme(m.group().lower(), m.start(), m.end()) for m in _DATE_LEX.finditer(text)]
    out: list[Mention] = []
    i = 0
    while i < len(lx):
        found = _date_at(lx, i, reference, region)
        if found is None:
            i += 1
            continue
        value, n = found
        if value is not None:
            out.append(Mention(value, segment, lx[i].start, lx[i + n - 1].end))
        i += n
    return out


def _date_at(lx: list[Lexeme], i: int, reference: date | None, region: str) -> tuple[date | None, int] | None:
    """The date said from lexeme i and how many lexemes it takes; (None, n) for a date that cannot be anchored."""
    w = lx[i].word
    iso = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", w)
    if iso:
        return _make(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)), None), 1
    slash = re.fullmatch(r"(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?", w)
    if slash:
        a, b, y = int(slash.group(1)), int(slash.group(2)), slash.group(3)
        month, day = (b, a) if _DAY_FIRST_REGIONS.get(region.upper(), True) else (a, b)
        year = None if y is None else int(y) + (2000 if len(y) == 2 else 0)
        return _make(year, month, day, reference), 1
    if w in MONTHS:  # "March 5th, 2024"
        day = _day_at(lx, i + 1)
        # "may" is a month only before a day in digits or an ordinal ("May 5th", not "may one")
        plain = day is not None and w == "may" and i + 1 < len(lx) and lx[i + 1].word in NUMBER_WORDS
        if day is not None and 1 <= day[0] <= 31 and not plain:
            year = _year_at(lx, i + 1 + day[1])
            n = 1 + day[1] + (year[1] if year else 0)
            return _make(year[0] if year else None, MONTHS[w], day[0], reference), n
    start = i + 1 if w == "the" else i  # "the fifth of March", "5 March 2024"
    day = _day_at(lx, start)
    if day is not None:
        at = start + day[1] + (1 if start + day[1] < len(lx) and lx[start + day[1]].word == "of" else 0)
        if at < len(lx) and lx[at].word in MONTHS and 1 <= day[0] <= 31 and (
                lx[at].word != "may" or lx[at - 1].word == "of" or _year_at(lx, at + 1)):
            year = _year_at(lx, at + 1)
            n = at + 1 - i + (year[1] if year else 0)
            return _make(year[0] if year else None, MONTHS[lx[at].word], day[0], reference), n
    if reference is not None:
        return _relative(lx, i, reference)
    return None
