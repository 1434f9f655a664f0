"""Numbered pages, streamed: the same page whatever the file and however it is cut in pieces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.workspace._files import MAX_LINE_CHARS, PageBuilder, render_page


def reference(text: str, offset: int, limit: int) -> tuple[list[str], int]:
    """The page as the whole-text implementation numbered it: split, then number."""
    text = text.removeprefix("\ufeff")
    if not text:
        return [], 0
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    out = []
    for number in range(offset, min(len(lines), offset - 1 + limit) + 1):
        line = lines[number - 1].removesuffix("\r")
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line clipped: {len(line) - MAX_LINE_CHARS} more characters]"
        out.append(f"{number}\t{line}")
    return out, len(lines)


texts = st.lists(
    st.one_of(
        st.text(alphabet="ab \t\r\n\ufeffé", max_size=40),
        st.builds(lambda n, c: c * n, st.integers(MAX_LINE_CHARS - 2, MAX_LINE_CHARS + 3), st.sampled_from("x\r")),
        st.just("\r\n"),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=texts, offset=st.integers(1, 12), limit=st.integers(1, 12), cuts=st.lists(st.integers(0, 5000)))
def test_a_page_fed_in_pieces_is_the_page_of_the_whole_text(
    text: str, offset: int, limit: int, cuts: list[int]
) -> None:
    builder = PageBuilder(offset, limit, None)
    start = 0
    for cut in sorted({c % (len(text) + 1) for c in cuts}):
        builder.feed(text[start:cut])
        start = cut
    builder.feed(text[start:])
    page = builder.finish()
    lines, total = reference(text, offset, limit)
    assert (page.lines, page.total) == (lines, total)
    if total and offset <= total:
        assert render_page(page).split("\n")[: len(lines)] == lines


def test_collecting_stops_past_the_budget_but_counting_goes_on() -> None:
    builder = PageBuilder(1, 2000, 100)
    builder.feed("".join(f"line {n}\n" for n in range(1, 1001)))
    page = builder.finish()
    assert page.stopped and page.total == 1000 and 100 < len("\n".join(page.lines)) < 200


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    short=st.lists(st.integers(0, 30), min_size=9, max_size=120),
    long_at=st.integers(0, 119),
    long_size=st.integers(MAX_LINE_CHARS - 1, MAX_LINE_CHARS + 2),
    first=st.sampled_from([1, 5, 95, 995]),
)
def test_a_long_line_among_many_is_clipped_wherever_it_stands(
    short: list[int], long_at: int, long_size: int, first: int
) -> None:
    # Many short lines take the page's whole-block road; a line over the limit must still be seen.
    sizes = [*short[: long_at % len(short)], long_size, *short[long_at % len(short) :]]
    text = "pad\n" * (first - 1) + "".join("y" * size + "\n" for size in sizes)
    builder = PageBuilder(first, len(sizes), None)
    builder.feed(text)
    page = builder.finish()
    assert (page.lines, page.total) == reference(text, first, len(sizes))
    assert page.clipped == (long_size > MAX_LINE_CHARS)


def test_a_page_that_fits_its_budget_exactly_is_whole() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 200))
    whole = len("\n".join(reference(text, 1, 500)[0]))
    fits = PageBuilder(1, 500, whole)
    fits.feed(text)
    assert not fits.finish().stopped
    short = PageBuilder(1, 500, whole - 1)
    short.feed(text)
    assert short.finish().stopped
