"""The matching lines a search reports, collected file by file within grep's limits."""

from __future__ import annotations

from toolcards.errors import RetriableError
from toolcards.workspace._grep_limits import MAX_GREP_COLLECTED, MAX_GREP_RESULTS

__all__ = ["Found", "RgRecord", "Shown"]

RgRecord = tuple[bytes, bytes, bytes | None]
"""A matching line as ripgrep printed it, kept raw until it is shown (most are not): its
text, then its column and byte offset, or its offset and None (see :data:`_WHOLE_RECORD`).

The text is the line transcoded to UTF-8 without its ``\n`` (a ``\r`` before it is
still there), or its preview and ripgrep's note. The column is the 1-based byte column of
the first match; the offset is where the line starts in the file as ripgrep read it
(after a byte-order mark, transcoded).
"""


Shown = str | RgRecord


class Found:
    """Matching lines as an engine reports them, file by file, in line order within a file.

    Only the first ``max_results`` lines in output order (path segment by segment, then
    line number) are kept; the others are counted. A file's lines are held apart until the
    file ends, so a file found to be binary is dropped whole.
    """

    def __init__(self, max_results: int = MAX_GREP_RESULTS) -> None:
        self.max_results = max_results
        self.lines = 0
        self.files = 0
        self.cut = False
        self.left_out = 0
        """Lines ripgrep reported that the tree did not hold when read again."""
        self._best: list[tuple[list[str], int, str, Shown]] = []
        self._rel: str | None = None
        self._staged: list[tuple[int, Shown]] = []
        self._staged_lines = 0

    def begin_file(self, rel: str) -> None:
        self.end_file()
        self._rel = rel

    def add(self, number: int, shown: Shown) -> None:
        """Count a matching line of the current file; raise when there are too many."""
        self._staged_lines += 1
        if self.lines + self._staged_lines > MAX_GREP_COLLECTED:
            raise _too_many()
        # Within a file lines come in order, so only its first few can be among the first overall.
        if len(self._staged) < self.max_results:
            self._staged.append((number, shown))

    def end_file(self) -> None:
        if self._rel is not None and self._staged_lines:
            self.lines += self._staged_lines
            self.files += 1
            key = self._rel.split("/")
            rel = self._rel
            self._best += [(key, number, rel, shown) for number, shown in self._staged]
            if len(self._best) > 2 * self.max_results:
                self._prune()
        self.drop_file()

    def drop_file(self) -> None:
        self._rel = None
        self._staged = []
        self._staged_lines = 0

    def best(self) -> list[tuple[str, int, Shown]]:
        """The lines to show, in output order: (root-relative path, line number, text)."""
        self.end_file()
        self._prune()
        return [(rel, number, shown) for _, number, rel, shown in self._best]

    def _prune(self) -> None:
        self._best.sort(key=lambda item: (item[0], item[1]))
        del self._best[self.max_results :]


def _too_many() -> RetriableError:
    return RetriableError(
        f"The pattern matches more than {MAX_GREP_COLLECTED:,} lines. Make it more specific, or narrow "
        "the search with path or include."
    )
