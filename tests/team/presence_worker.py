"""A worker process for the presence tests: one ``toolcards.Team`` member in a process of its own.

Run as ``python -m tests.team.presence_worker TEAM NAME INTERVAL TTL``, with ``TOOLCARDS_STORE``
naming the team's store. It joins the team as ``NAME`` (presence renewed every ``INTERVAL``
seconds, expiring ``TTL`` seconds after the last renewal) and prints ``joined`` or
``refused <message>``. Then, for each line on stdin: ``roster`` prints ``roster <JSON>`` (the
team's present members as ``[name, pid]`` pairs); ``leave`` closes the team (its member leaves)
and prints ``left``; ``exit`` (or the end of stdin) stops it.

:class:`Worker` starts one from a test and talks to it.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WAIT = 60.0
"""Seconds a worker may take to answer before the test fails."""


class Worker:
    """One worker process of team ``team`` joining as ``name``; its stdout read in a thread.

    :attr:`first` is what it said after trying to join (``joined`` or ``refused ...``).
    """

    def __init__(self, team: str, name: str, env: dict[str, str], *, interval_s: float, ttl_s: float) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.team.presence_worker", team, name, str(interval_s), str(ttl_s)],
            cwd=REPO,
            env={**env, "PYTHONPATH": str(REPO)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.first = self.line()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def line(self) -> str:
        """The next line it prints (waits up to :data:`WAIT`)."""
        try:
            line = self._lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"worker {self.name} said nothing for {WAIT} s") from None
        assert line is not None, f"worker {self.name} ended (exit code {self.process.poll()})"
        return line

    def send(self, command: str) -> None:
        """Send ``command`` without waiting for an answer."""
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def ask(self, command: str) -> str:
        """Send ``command``; its answer."""
        self.send(command)
        return self.line()

    def roster(self) -> dict[str, int]:
        """The team's present members as this worker's process sees them: name → pid."""
        answer = self.ask("roster")
        assert answer.startswith("roster "), answer
        return dict(json.loads(answer.removeprefix("roster ")))

    def kill(self) -> None:
        """``kill -9``: no leave, no flush."""
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        """Ask it to exit (its member leaves); kill it if it does not within 30 s."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):  # it may have ended already
                self.send("exit")
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()


def say(line: str) -> None:
    print(line, flush=True)


def main(team_id: str, name: str, interval_s: float, ttl_s: float) -> None:
    import toolcards
    from toolcards.actors import ActorSystem
    from toolcards.store import store_journals, store_presence

    with ActorSystem(journal=store_journals(), presence=store_presence(interval_s=interval_s, ttl_s=ttl_s)) as system:
        team = toolcards.Team(team_id, system=system)
        try:
            team.member(name)
        except toolcards.WiringError as exc:
            say(f"refused {exc}")
        else:
            say("joined")
        for line in sys.stdin:
            command = line.strip()
            if command == "roster":
                say("roster " + json.dumps([[m.name, m.pid] for m in team.handle.present_members()]))
            elif command == "leave":
                team.close()
                say("left")
            elif command == "exit":
                break
        team.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
