"""A worker process for the mailbox tests: one member of a team on the store of ``TOOLCARDS_STORE``
(or the workspaces root's default store).

Run as ``python -m tests.mailbox_worker MODE TEAM NAME [ARGS...]``. It joins TEAM as member NAME
through the front door, binds a messaging card, prints ``ready``, then:

    send TO TEXT          waits until TO is in the team's roster, sends TEXT, prints ``sent``.
    stop TO REASON        waits until TO is in the roster, asks it to stop, prints ``asked``.
    remind AFTER_S TEXT   sets a reminder, prints ``set <id>``, exits (its process ends).
    watch MEMBER          waits until MEMBER has an unread message, prints ``seen``.
    read                  reads every unread message, prints each as ``got <text>``, then ``done``.
    take MEMBER           waits for ``go``; takes MEMBER's messages through the mailbox actor
                          (as the member's second process would) until none is left, printing
                          ``got <text>`` for each, then ``done``.
    exchange INDEX COUNT  waits for ``go`` on stdin; sends COUNT messages ``W<INDEX>#<k>`` round
                          robin to the other members W0..W3, reading its own mailbox between sends
                          (and retrying a send a full mailbox refused) until it has read every
                          message meant for it; prints ``got <text>`` for each, then ``done``.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable

import toolcards
from toolcards.errors import RetriableError
from toolcards.team import MessagingTool

WAIT = 120.0
PEERS = 4


def main(mode: str, team_name: str, name: str, args: list[str]) -> None:
    with toolcards.Team(team_name) as team:
        member = team.member(name)
        card = MessagingTool()
        tools = {tool.name: tool for tool in member.factory(card).tools()}
        say("ready")
        if mode in ("send", "stop"):
            wait_until(lambda: args[0] in {m.name for m in team.handle.present_members()})
            if mode == "send":
                tools["send_message"].call_sync({"to": args[0], "text": args[1]})
                say("sent")
            else:
                tools["stop_member"].call_sync({"name": args[0], "reason": args[1]})
                say("asked")
        elif mode == "remind":
            answer = tools["remind_me"].call_sync({"text": args[1], "after_s": float(args[0])})
            say("set " + str(answer).split()[1])
        elif mode == "watch":
            from toolcards.actors._asking import ask

            wait_until(lambda: ask(card.mailbox.unread(args[0]), actor="#Mailbox")[0] > 0)
            say("seen")
        elif mode == "read":
            for text in read_all(tools):
                say(f"got {text}")
            say("done")
        elif mode == "take":
            from toolcards.actors._asking import ask

            if sys.stdin.readline().strip() != "go":
                return
            while True:
                messages, _ = ask(card.mailbox.take(args[0], limit_chars=1), actor="#Mailbox")
                if not messages:
                    break
                for message in messages:
                    say(f"got {message.text}")
            say("done")
        elif mode == "exchange":
            if sys.stdin.readline().strip() != "go":
                return
            exchange(tools, int(args[0]), int(args[1]))


def exchange(tools: dict[str, toolcards.Tool], index: int, count: int) -> None:
    expected = sum(1 for sender in range(PEERS) if sender != index for k in range(count) if target(sender, k) == index)
    received = 0

    def read() -> None:
        nonlocal received
        for text in read_all(tools):
            say(f"got {text}")
            received += 1

    for k in range(count):
        while True:
            try:
                tools["send_message"].call_sync({"to": f"W{target(index, k)}", "text": f"W{index}#{k}"})
                break
            except RetriableError as exc:
                if "full" not in str(exc):
                    raise
                read()
                time.sleep(0.01)
        if k % 10 == 0:
            read()
    deadline = time.monotonic() + WAIT
    while received < expected:
        assert time.monotonic() < deadline, f"W{index} read {received} of {expected}"
        read()
        time.sleep(0.01)
    say("done")


def target(sender: int, k: int) -> int:
    """Whom sender ``W<sender>`` sends its ``k``-th message to: the others, in turn."""
    return (sender + 1 + k % (PEERS - 1)) % PEERS


def read_all(tools: dict[str, toolcards.Tool]) -> list[str]:
    texts = []
    while True:
        page = str(tools["read_messages"].call_sync({}))
        if page == "No unread messages.":
            return texts
        found = re.findall(r"^Message from @\S+:\n(.*)$|^Reminder \d+ you set, due .*:\n(.*)$", page, re.M)
        texts += [message or reminder for message, reminder in found]


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def say(line: str) -> None:
    print(line.replace("\n", " "), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
