"""A ``toolcards`` command serving HTTP on a free port, for the benchmarks and tests that need one.

``ServeProcess(config, env)`` runs ``toolcards serve --config CONFIG --transport http --port 0``;
``ServeProcess.command([...], env)`` runs any ``toolcards`` command that serves on ``--port 0``
and announces its URL on stderr (``toolcards dashboard``).

Its stderr is drained in a thread from the start (a full pipe would block the server), so
everything it prints is kept in :attr:`ServeProcess.lines`; :meth:`ServeProcess.url` waits for
the announcing line and :meth:`ServeProcess.stop` ends the process.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["SERVING", "ServeProcess"]

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120.0
"""Longest a server may take to say where it serves."""
SERVING = r"serving team \S+ at (http://\S+)"
"""What ``toolcards serve --transport http`` prints once it listens; group 1 is its URL."""


class ServeProcess:
    """One ``toolcards ... --port 0`` process serving HTTP; its stderr drained in a thread.

    Args:
        config: The team config ``toolcards serve`` serves.
        env: The process's whole environment. Without ``TOOLCARDS_TOKEN`` in it the server
            generates a token and prints it in its URL, so that variable is dropped unless
            ``keep_token``.
        extra: More ``toolcards serve`` arguments.
        keep_token: Pass ``TOOLCARDS_TOKEN`` through when ``env`` has it.
    """

    def __init__(
        self,
        config: Path,
        env: dict[str, str],
        *extra: str,
        keep_token: bool = False,
    ) -> None:
        if not keep_token:
            env = {name: value for name, value in env.items() if name != "TOOLCARDS_TOKEN"}
        self._start(["serve", "--config", str(config), "--transport", "http", *extra], env, SERVING)

    @classmethod
    def command(cls, args: list[str], env: dict[str, str], announces: str) -> ServeProcess:
        """``toolcards ARGS --port 0``, whose stderr line matching ``announces`` (group 1: the URL)
        says it listens."""
        self = cls.__new__(cls)
        self._start(args, env, announces)
        return self

    def _start(self, args: list[str], env: dict[str, str], announces: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolcards.cli", *args, "--port", "0"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        """Every line the process printed on stderr so far, without line ends."""
        self._announces = re.compile(announces)
        self._announcement: int | None = None
        self._changed = threading.Condition()
        self._ended = False
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # read to the end: a full pipe would block the server
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                if self._announcement is None and self._announces.search(line):
                    self._announcement = len(self.lines) - 1
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def announcement(self) -> str:
        """The line that said where the process serves (waits for it).

        Raises:
            RuntimeError: the process ended, or did not say within ``START_TIMEOUT_S``.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._announcement is not None or self._ended, START_TIMEOUT_S)
            if self._announcement is None:
                tail = " | ".join(self.lines[-20:])
                raise RuntimeError(f"a server did not start (exit code {self.process.poll()}): {tail[-400:]}")
            return self.lines[self._announcement]

    def url(self) -> str:
        """The URL the process announced (waits for it); see :meth:`announcement`."""
        found = self._announces.search(self.announcement())
        assert found is not None
        return found[1]

    def line_after_announcement(self, timeout: float = 60.0) -> str:
        """The next line printed after the announcing one (waits for it)."""
        self.announcement()
        with self._changed:
            assert self._announcement is not None
            wanted = self._announcement + 1
            self._changed.wait_for(lambda: len(self.lines) > wanted or self._ended, timeout)
            if len(self.lines) <= wanted:
                raise RuntimeError(f"the process printed nothing after: {self.lines[wanted - 1]}")
            return self.lines[wanted]

    def stop(self) -> str:
        """End the process (SIGTERM, then SIGKILL after 30 s); returns what it printed on stderr
        after its announcing line (everything, if it never announced)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(30)
        with self._changed:
            start = 0 if self._announcement is None else self._announcement + 1
            return "\n".join(self.lines[start:])
