"""The background embedding of one actor's texts, from the actor's start to its end: :class:`EmbeddingKeeper`.

The planning board and the knowledge graph share this glue between their actor and its
:class:`~toolcards.vector.TextVectors`. :meth:`EmbeddingKeeper.start` restores the stored rows
and hands every text lacking a current vector to the worker. The actor passes
:class:`~toolcards.vector.TextsEmbedded` and :class:`~toolcards.vector.GraceElapsed` messages
to :meth:`EmbeddingKeeper.receive`, which persists vectors through the actor (after a
catch-up) and embeds overdue texts; any other message goes on to pykka's default, which logs
it, so nothing is swallowed. A failure to persist or catch up is logged in one line and never
reaches callers: vectors are derived data, recomputed at the next start.
:meth:`EmbeddingKeeper.stop` ends the worker, query thread and grace timer; the actor calls it
from ``on_stop`` and ``on_failure``, so no thread outlives an actor, stopped or crashed. The
keeper knows nothing of the store: the actor gives it callables for what touches its state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolcards.core._error_text import typed_line
from toolcards.vector._text_vectors import CLOSE_WAIT_S, GraceElapsed, TextsEmbedded, TextVector, TextVectors

if TYPE_CHECKING:
    from toolcards.vector._index import VectorRows
    from toolcards.vector._param import EmbeddingParam

__all__ = ["EmbeddingKeeper"]

logger = logging.getLogger(__name__)


class EmbeddingKeeper:
    """Keeps an actor's :class:`~toolcards.vector.TextVectors` from ``on_start`` to ``on_stop``
    or ``on_failure``.

    Args:
        param: the embedding provider.
        name: names the threads and log lines (the actor's store namespace).
        text_of: the current text of a key, or ``None`` when the key is gone.
        persist: stores the vectors given, in one write of the actor's store after catching
            up with it, keeping only those :meth:`TextVectors.still_current`
            (:meth:`TextVectors.row` gives each one's row); returns those it stored. May raise:
            the failure is logged and the vectors still current are indexed all the same.
        catch_up: catches the actor up with what other processes committed (before overdue
            texts are embedded, a vector may have landed meanwhile). May raise, like ``persist``.
        store_closed: whether the actor's store is closed: a write failing then is a
            shutdown, logged at DEBUG, not a failure.
        index_factory: passed to :class:`TextVectors` (where the vectors are kept).

    Every method runs on the actor's thread (``on_start``, ``on_receive``, ``on_stop``,
    ``on_failure`` or a method of the actor).
    """

    def __init__(
        self,
        param: EmbeddingParam,
        *,
        name: str,
        text_of: Callable[[str], str | None],
        persist: Callable[[Sequence[TextVector]], list[TextVector]],
        catch_up: Callable[[], object],
        store_closed: Callable[[], bool],
        index_factory: Callable[[int], VectorRows] | None = None,
    ) -> None:
        self._param = param
        self._name = name
        self._text_of = text_of
        self._persist = persist
        self._catch_up = catch_up
        self._store_closed = store_closed
        self._index_factory = index_factory
        self._vectors: TextVectors | None = None
        self._stopped = False

    def __repr__(self) -> str:
        return f"<EmbeddingKeeper {self._name} {self._vectors!r}>"

    @property
    def vectors(self) -> TextVectors | None:
        """The vectors, from :meth:`start` until :meth:`stop`; ``None`` outside that span."""
        return self._vectors

    def start(
        self, deliver: Callable[[object], None], keys: Iterable[str], rows: Mapping[str, Any], *, shared: bool
    ) -> None:
        """Restore the stored ``rows`` and give each of ``keys`` a vector (see :meth:`TextVectors.load`).

        ``deliver`` sends the worker's and the timer's messages to the actor (``actor_ref.tell``).
        Blocks while the rows are decoded; embedding happens on the worker thread. Does nothing
        after :meth:`stop`.
        """
        if self._stopped or self._vectors is not None:
            return
        from toolcards.vector._service import get_embedding_service

        self._vectors = TextVectors(
            get_embedding_service(self._param),
            text_of=self._text_of,
            deliver=deliver,
            name=self._name,
            index_factory=self._index_factory,
        )
        self._vectors.load(keys, rows, shared=shared)

    def receive(self, message: object) -> bool:
        """Handle ``message`` when it is the worker's or the grace timer's; ``False`` for any
        other, which the actor handles (or passes to pykka's default, which logs it)."""
        if isinstance(message, TextsEmbedded):
            if self._vectors is not None:
                self._store(self._vectors, message)
            return True
        if isinstance(message, GraceElapsed):
            if self._vectors is not None:
                self._embed_overdue(self._vectors)
            return True
        return False

    def stop(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """End the worker, the query thread and the grace timer; drop what was not stored yet.

        Waits up to ``wait_s`` for an embedding call in progress (``on_stop``: the default;
        ``on_failure``: 0). Vectors not stored are recomputed on the next start. Calling it
        again does nothing.
        """
        self._stopped = True
        vectors, self._vectors = self._vectors, None
        if vectors is not None:
            vectors.close(wait_s=wait_s)

    # -- internals -----------------------------------------------------------------------

    def _store(self, vectors: TextVectors, message: TextsEmbedded) -> None:
        """Persist and index the worker's vectors that are still of their key's text."""
        accepted: list[TextVector] = []
        if message.vectors:
            try:
                accepted = self._persist(message.vectors)
            except Exception as exc:
                if self._store_closed():
                    logger.debug("%s: %d vectors not stored, the store is closed", self._name, len(message.vectors))
                else:
                    logger.error(
                        "%s: storing %d vectors failed; they are recomputed on the next start: %s",
                        self._name,
                        len(message.vectors),
                        typed_line(exc),
                    )
                    logger.debug("vector write failure", exc_info=True)
                accepted = vectors.still_current(message.vectors)
        vectors.received(message, accepted)

    def _embed_overdue(self, vectors: TextVectors) -> None:
        """Embed the texts another process wrote but stored no vector for in time."""
        try:
            self._catch_up()
        except Exception as exc:
            logger.warning("%s: catching up before embedding overdue texts failed: %s", self._name, typed_line(exc))
            logger.debug("catch-up failure", exc_info=True)
        vectors.embed_overdue()
