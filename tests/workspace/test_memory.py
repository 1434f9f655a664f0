"""Reading one page of a 200 MB file costs a page, not the file.

Measured in child processes, so nothing else this test session allocated counts: each
child binds a ``WorkspaceTool`` and reads one page through the pipeline, then reports its
own peak resident set (``ru_maxrss``). The baseline child reads a small file; the others
read a page of a 200 MB text file (the first page, and one deep inside it). The difference
must stay within 16 MB. The gate still records the digest of the whole file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FILE_BYTES = 200 * 1024 * 1024
LIMIT_BYTES = 16 * 1024 * 1024

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from toolcards import TOOL_CALL, ToolFactory
    from toolcards.testing import FakeObserver
    from toolcards.workspace._tool import WorkspaceTool

    path, offset = sys.argv[1], int(sys.argv[2])
    with FakeObserver("Reader", "memory") as reader:
        card = WorkspaceTool()
        read = {tool.name: tool for tool in ToolFactory([card], observer=reader).tools()}["workspace_read"]
        page = read.call_sync({"path": path, "offset": offset, "limit": 2000}, channel=TOOL_CALL)
        record = card._actor_proxy().record_of(str(reader.address), path).get()
    print(json.dumps({
        "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "chars": len(page),
        "first": page.split("\\n")[1],
        "digest": record.digest,
        "full": record.full,
    }))
    """
)


def read_in_child(root: Path, path: str, offset: int = 1) -> dict[str, object]:
    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(root)}
    env.pop("TOOLCARDS_STORE", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, path, str(offset)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_page_of_a_200_mb_file_costs_at_most_16_mb(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    tree = root / "memory"
    tree.mkdir(parents=True)
    (tree / "small.txt").write_text("".join(f"line {n}\n" for n in range(1, 2001)))
    line = "{:>10} of a big file that a command wrote into the workspace, one line after another\n"
    hasher = hashlib.sha256()
    with (tree / "big.txt").open("w") as handle:
        written, number = 0, 0
        while written < FILE_BYTES:
            block = "".join(line.format(n) for n in range(number, number + 10_000))
            number += 10_000
            handle.write(block)
            hasher.update(block.encode())
            written += len(block)
    lines = number

    baseline = read_in_child(root, "small.txt")
    first = read_in_child(root, "big.txt")
    deep = read_in_child(root, "big.txt", offset=lines - 1000)

    for measured in (first, deep):
        extra = (int(measured["peak_kb"]) - int(baseline["peak_kb"])) * 1024  # type: ignore[call-overload]
        assert extra <= LIMIT_BYTES, f"reading one page cost {extra / 2**20:.1f} MB over the baseline"
        assert measured["digest"] == hasher.hexdigest()  # the gate knows the whole file
        assert measured["full"] is False
    assert str(first["first"]).startswith("1\t         0 of a big file")
    assert str(deep["first"]).startswith(f"{lines - 1000}\t{lines - 1001:>10} of a big file")
