"""A worker process for the metadata and model tests: one member of team ``choices`` acting on
the store named by ``TOOLCARDS_STORE``, then exiting.

Run as ``python -m tests.choice_worker MODE NAME ARG``:

    metadata  set field ``customer`` to ARG with the ``set_metadata`` command; prints the block.
    model     switch member NAME to roster entry ARG with ``switch_model``; prints the answer.
"""

from __future__ import annotations

import sys

from toolcards.actors import ActorSystem
from toolcards.core._factory import ToolFactory
from toolcards.testing import FakeObserver

TEAM = "choices"
ROSTER = {"fast": {"factory": "tests.model.scripted:fast"}, "deep": {"factory": "tests.model.scripted:deep"}}


def main(mode: str, name: str, arg: str) -> None:
    from toolcards.metadata import MetadataTool, SetMetadataParam
    from toolcards.model import ModelTool, SwitchModelParam

    with ActorSystem() as system:
        agent = FakeObserver(name, TEAM, system=system)
        if mode == "metadata":
            commands = ToolFactory([MetadataTool()], observer=agent).get_commands()
            print(commands[SetMetadataParam](fields={"customer": arg}), flush=True)
        else:
            commands = ToolFactory([ModelTool(roster=ROSTER)], observer=agent).get_commands()
            print(commands[SwitchModelParam](name=arg), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
