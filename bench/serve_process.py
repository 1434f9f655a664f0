"""A ``toolcards serve --transport http --port 0`` process, for the benchmarks that need one.

Its stderr is drained in a thread (a full pipe would block the server), the URL it prints
(with the token it generated) is read from it, and :meth:`ServeProcess.stop` ends it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path

__all__ = ["ServeProcess"]

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120.0
"""Longest a server may take to say where it serves."""
_SERVING = re.compile(r"serving team \S+ at (http://\S+)")


class ServeProcess:
    """One ``toolcards serve --transport http --port 0`` process; its stderr drained in a thread."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        command = [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config)]
        # Without TOOLCARDS_TOKEN each server generates a token and prints it in its URL (_SERVING).
        env = {name: value for name, value in env.items() if name != "TOOLCARDS_TOKEN"}
        self.process = subprocess.Popen(
            [*command, "--transport", "http", "--port", "0"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: deque[str] = deque(maxlen=20)
        self._url: list[str] = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # read to the end: a full pipe would block the server
            self.lines.append(line.rstrip())
            found = _SERVING.search(line)
            if found and not self._url:
                self._url.append(found[1])
                self._ready.set()
        self._ready.set()

    def url(self) -> str:
        self._ready.wait(START_TIMEOUT_S)
        if not self._url:
            tail = " | ".join(self.lines)
            raise RuntimeError(f"a server did not start (exit code {self.process.poll()}): {tail[-400:]}")
        return self._url[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(5)
