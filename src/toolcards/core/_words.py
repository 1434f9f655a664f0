"""The words of a text as every keyword search of the package reads them.

One tokenizer for the knowledge graph, the planning board and any other keyword index, so a
query finds the same words everywhere: case-folded letter and digit runs (``user_service`` →
``user``, ``service``; ``Alice's`` → ``alice``), a trailing plural folded (``services`` →
``service``, ``policies`` → ``policy``), and the words that say nothing about what is meant
(:data:`STOP_WORDS`, single letters) dropped. Names are identities: :func:`name_tokens` keeps
every word of one, and :func:`name_key` is how two names compare.

Terms and names are read through :func:`fold_case`, one folding for both, so a name found by
its words is found by its whole name too: ``Hauptstraße`` is ``hauptstrasse``, ``İstanbul``
is ``istanbul``, and a name typed in decomposed form (``Cafe`` + U+0301) is the composed one.

Pure Python, no imports beyond the standard library.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["STOP_WORDS", "fold", "fold_case", "name_key", "name_tokens", "query_terms", "tokenize", "words_of"]

_WORD = re.compile(r"[^\W_]+")
# For ASCII text, letter/digit runs are what is left after every other byte becomes a space:
# a byte translation and a split, several times cheaper than the Unicode pattern above.
_ASCII_WORDS = bytes(ord(chr(code).lower()) if chr(code).isalnum() else 32 for code in range(128)) + bytes(
    range(128, 256)
)

STOP_WORDS = frozenset(
    (  # noqa: SIM905 - a paragraph of words reads better than a hundred lines of them
        "a about above after again all also am an and any are as at be because been before being below "
        "between both but by can could did do does doing down during each few for from further had has have "
        "having he her here hers herself him himself his how i if in into is it its itself just me more most "
        "my myself no nor not now of off on once only or other our ours ourselves out over own same she "
        "should so some such than that the their theirs them themselves then there these they this those "
        "through to too under until up very was we were what when where which while who whom why will with "
        "would you your yours yourself yourselves"
    ).split()
)
"""Words that say nothing about what a text is about (English function words)."""


@functools.lru_cache(maxsize=1 << 16)
def fold(word: str) -> str:
    """``word`` with a trailing plural folded: ``services`` → ``service``, ``policies`` → ``policy``.

    Cached: texts reuse a small vocabulary, and indexing a batch folds tens of thousands of words.
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def fold_case(text: str) -> str:
    """``text`` as every comparison of names and terms reads it: composed (NFC) and case-folded,
    the dot a capital ``İ`` leaves on its ``i`` dropped.

    Case folding, not lowercasing, so that ``STRASSE`` meets ``Straße``. Folding ``İ`` gives
    ``i`` and a combining dot above (U+0307), which is no letter: the word would split into
    ``i`` and ``stanbul`` and never meet ``istanbul``, which is how it is typed. Decomposed
    first, as Unicode's canonical caseless match does, so both forms of a name fold alike.
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
    return folded.replace("i\u0307", "i")


def _ascii_runs(text: str) -> list[str]:
    return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()


def words_of(text: str) -> list[str]:
    """The case-folded letter/digit runs of ``text`` (``_`` and punctuation separate words).

    Plain case folding, with no normalisation: each word is a substring of
    ``text.casefold()``, which the planning board matches words against.
    """
    if text.isascii():
        return _ascii_runs(text)
    return _WORD.findall(text.casefold())


def _folded_words(text: str) -> list[str]:
    """The letter/digit runs of ``text`` read through :func:`fold_case`."""
    if text.isascii():
        return _ascii_runs(text)
    return _WORD.findall(fold_case(text))


def tokenize(text: str) -> list[str]:
    """The terms of ``text``: its words (read through :func:`fold_case`), plurals folded, stop
    words and single letters dropped."""
    return [fold(word) for word in _folded_words(text) if word not in STOP_WORDS and (len(word) > 1 or word.isdigit())]


def name_tokens(name: str) -> list[str]:
    """The words of a name (read through :func:`fold_case`), plurals folded; every word kept
    (a name is an identity)."""
    return list(map(fold, _folded_words(name)))


def name_key(text: str) -> str:
    """``text`` as names are compared: through :func:`fold_case`, whitespace collapsed."""
    return " ".join(fold_case(text).split())


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query`` in order; if it has only stop words, those words."""
    terms = tokenize(query)
    if not terms:
        terms = name_tokens(query)
    return list(dict.fromkeys(terms))
