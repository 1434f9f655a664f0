"""The package's one tokenizer: words, folded plurals, stop words, names."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from toolcards.core._words import fold, fold_case, name_key, name_tokens, query_terms, tokenize, words_of


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
    assert words_of(text) == re.findall(r"[^\W_]+", text.casefold())


@given(_TEXT.filter(str.isascii))
def test_words_of_ascii_text_matches_the_unicode_pattern(text: str) -> None:
    assert words_of(text) == re.findall(r"[^\W_]+", text.casefold())


def test_names_and_words_are_read_through_one_case_folding() -> None:
    composed, decomposed = unicodedata.normalize("NFC", "Café Müller"), unicodedata.normalize("NFD", "Café Müller")
    assert name_key("İstanbul  Office") == name_key("ISTANBUL office") == name_key("istanbul office")
    assert tokenize("İzmir") == tokenize("IZMIR") == tokenize("izmir") == ["izmir"]
    assert tokenize("Hauptstraße") == tokenize("HAUPTSTRASSE") == ["hauptstrasse"]
    assert name_key(decomposed) == name_key(composed) == "café müller"
    assert tokenize(decomposed) == tokenize(composed) == ["café", "müller"]
    assert fold_case("ΟΔΟΣ") == fold_case("οδος") == fold_case("οδοσ")


@given(_TEXT)
def test_fold_case_is_stable_and_a_names_words_are_the_words_of_its_key(text: str) -> None:
    assert fold_case(fold_case(text)) == fold_case(text)
    assert name_tokens(text) == [fold(word) for word in re.findall(r"[^\W_]+", name_key(text))]


@given(_TEXT)
def test_each_word_of_a_text_is_in_the_text_case_folded(text: str) -> None:
    # The planning board finds a task whose case-folded text holds each word of the query.
    folded = text.casefold()
    assert all(word in folded for word in words_of(text))
