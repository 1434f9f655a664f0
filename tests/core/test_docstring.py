from toolcards.core._docstring import parse_docstring


def test_description_and_args() -> None:
    doc = parse_docstring(
        """Summary line.

        Second paragraph
        wrapped.

        Args:
            alpha (int): First thing.
            beta: Second thing
                continued.

        Raises:
            ValueError: never shown.
        """
    )
    assert doc.description == "Summary line.\n\nSecond paragraph wrapped."
    assert doc.params == {"alpha": "First thing.", "beta": "Second thing continued."}


def test_empty_docstring() -> None:
    assert parse_docstring(None).description == ""
    assert parse_docstring("").params == {}
