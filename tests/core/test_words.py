"""The package's one tokenizer: words, folded plurals, stop words, names."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from toolcards.core._words import fold, name_key, name_tokens, query_terms, tokenize, words_of


def test_tokenize_splits_identifiers_folds_plurals_and_drops_stop_words() -> None:
    assert tokenize("The user_service handles Policies and tokens") == ["user", "service", "handle", "policy", "token"]
    assert tokenize("class status") == ["class", "statu"]  # both sides fold the same way
    assert tokenize("Alice's 2 cats") == ["alice", "2", "cat"]  # the possessive s goes, digits stay


def test_query_of_only_stop_words_keeps_them() -> None:
    assert query_terms("who is it") == ["who", "is", "it"]
    assert query_terms("alice Alice ALICE") == ["alice"]


def test_names_keep_every_word_and_compare_without_case_or_spacing() -> None:
    assert name_tokens("The A-Team") == ["the", "a", "team"]
    assert name_key("  User   DB ") == "user db" == name_key("user db")
    assert fold("services") == "service" and fold("class") == "class" and fold("policies") == "policy"


_TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(" _-.,'\"\t\nAZaz09"), max_size=40)


@given(_TEXT)
def test_words_of_finds_the_letter_and_digit_runs_of_the_unicode_pattern(text: str) -> None:
    assert words_of(text) == re.findall(r"[^\W_]+", text.lower())


@given(_TEXT.filter(str.isascii))
def test_words_of_ascii_text_matches_the_unicode_pattern(text: str) -> None:
    assert words_of(text) == re.findall(r"[^\W_]+", text.lower())
