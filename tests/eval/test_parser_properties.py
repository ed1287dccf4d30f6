"""Property-based tests for the question/option/answer parsers: valid input round-trips, anything else is a
ValueError (never a crash of another kind, never silent data loss)."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from hyporag.programs import make_program
from hyporag.questions.records import normalize_options, record_to_example
from tests.conftest import dummy_roles

texts = st.text(min_size=1, max_size=40).filter(lambda s: s.strip())
option_dicts = st.dictionaries(st.sampled_from(string.ascii_uppercase[:6]), texts, min_size=2, max_size=6)


@given(option_dicts)
def test_options_round_trip_sorted_and_stripped(options):
    parsed = normalize_options(options)
    assert list(parsed) == sorted(options)
    assert all(parsed[k] == v.strip() for k, v in options.items())


@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers()), st.dictionaries(st.text(), st.text())))
def test_arbitrary_options_parse_or_raise_value_error(raw):
    try:
        parsed = normalize_options(raw)
    except ValueError:
        return
    assert len(parsed) >= 2 and all(len(k) == 1 and k in string.ascii_uppercase for k in parsed)


@given(st.dictionaries(st.sampled_from(["id", "question", "options", "answer", "x"]),
                       st.one_of(st.text(max_size=10), st.integers(), option_dicts, st.none())))
def test_arbitrary_records_parse_or_raise_value_error(record):
    try:
        example = record_to_example(record, "fallback")
    except ValueError:
        return
    assert example.answer in example.options and example.question.strip()


@settings(max_examples=40)
@given(options=option_dicts, reply=st.text(max_size=5))
def test_any_answer_reply_is_a_letter_among_options_or_a_parse_failure(options, reply):
    program = make_program("cot", roles=dummy_roles([{"answer": reply}] * 2))
    prediction = program(question="Q?", options=normalize_options(options))
    assert (prediction.answer in options and not prediction.parse_failure) or (
        prediction.answer is None and prediction.parse_failure)
