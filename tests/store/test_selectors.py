import pytest

from callscope.errors import ValidationFailed
from callscope.store.selectors import parse_selector

LABELS = {"env": "prod", "tier": "web", "callscope.io/id": "7", "empty": ""}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("   ", True),
        ("env=prod", True),
        ("env=dev", False),
        ("env==prod", True),
        ("env==dev", False),
        ("env!=dev", True),
        ("env!=prod", False),
        ("missing!=x", True),  # != matches when the key is absent
        ("env in (dev,prod)", True),
        ("env in (dev, staging)", False),
        ("missing in (a)", False),
        ("env notin (dev,staging)", True),
        ("env notin (prod)", False),
        ("missing notin (a)", True),  # notin matches when the key is absent
        ("env", True),
        ("missing", False),
        ("!missing", True),
        ("!env", False),
        ("callscope.io/id=7", True),
        ("empty=", True),
        ("env=", False),
        ("empty in ()", True),
        ("env=prod,tier=web", True),
        ("env=prod,tier=db", False),
        (" env = prod , tier in ( web ) , !missing ", True),
        ("callscope.io/id>5", True),
        ("callscope.io/id<5", False),
        ("env>5", False),
    ],
)
def test_matches(selector, expected):
    assert parse_selector(selector).matches(LABELS) is expected


def test_empty_labels():
    assert parse_selector("a!=b,!c,d notin (e)").matches({})
    assert not parse_selector("a").matches({})
    assert parse_selector("a!=b").matches(None)


@pytest.mark.parametrize(
    "selector",
    [
        "env=prod,",
        ",env=prod",
        "=prod",
        "env=prod=x",
        "env in prod",
        "env in (prod",
        "env in (a b)",
        "env notin",
        "env prod",
        "!",
        "!env=prod",
        "env=(",
        "a>b",
        "Bad_Prefix/key=1",
        "-key=1",
        "key=-value",
        "k" * 64 + "=1",
        "key=" + "v" * 64,
        "in=1",
    ],
)
def test_bad_syntax_raises_validation_failed(selector):
    with pytest.raises(ValidationFailed) as info:
        parse_selector(selector)
    assert "invalid label selector" in info.value.errors[0]


def test_round_trip():
    text = "a=b,c!=d,e in (f,g),h notin (i),j,!k"
    assert str(parse_selector(text)) == text
    assert parse_selector(str(parse_selector(text))) == parse_selector(text)
