"""The workspace journal as a git repository: :func:`export_git`.

One commit per journal entry, oldest first, on branch ``journal`` of a repository at
``dest`` (made when missing, ``git init --bare`` so no work tree is written): the author is
the member who made the change (``outside`` for a change made without the tools), the date
the change's time, the message its tool, task and summary, with ``Change: <id>`` as a
trailer. Built with git's plumbing (``hash-object``, ``update-index`` on a private index,
``write-tree``, ``commit-tree``, ``update-ref``) run as subprocesses, so nothing of the tree
is touched and no git configuration of the user's is needed.

The first commit holds the files as they were before the oldest entry the journal keeps
(retention may have dropped older ones), as far as their content is kept. A version
recorded by digest alone (a file over the journal's size limit) cannot be exported: its
path is left as it was and the commit message says so. Directories are not exported (git
keeps files). Exporting again rebuilds the branch from the journal, so the same journal gives
the same commits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._journal import Journal, Ref, StoredEntry

__all__ = ["BRANCH", "export_git"]

BRANCH = "journal"
"""The branch the export writes."""

_DIRECTORY = "/"
_UNKEPT = "!"
_BATCH = 64
"""Versions read from the store at once."""


def export_git(journal: Journal, dest: Path) -> str:
    """Write every entry ``journal`` keeps as a commit of branch :data:`BRANCH` in the git
    repository at ``dest`` (a bare one is made where nothing is); returns one line saying
    what was written.

    Raises:
        RetriableError: ``dest`` is something other than a git repository or an empty
            directory; git is not installed.
        ToolFailed: a git command failed (its message is quoted).
    """
    git = shutil.which("git")
    if git is None:
        raise RetriableError("git is not installed here, so the journal cannot be exported as a repository.")
    journal.refresh()
    entries = list(reversed(journal.select()))
    repository = _repository(git, dest)
    index = repository / "toolcards-export.index"
    index.unlink(missing_ok=True)
    run = _Git(git, repository, index)
    try:
        blobs: dict[str, str] = {}
        parent = ""
        seed = _seed(entries)
        if seed:
            _write_versions(journal, run, seed.values(), blobs)
            run.index({path: blobs.get(ref or "") for path, ref in seed.items()})
            parent = run.commit(parent, "toolcards", "", entries[0].at, "The files before the first change kept.")
        for entry in entries:
            refs = [after for _, _, after, _, _ in entry.files]
            _write_versions(journal, run, refs, blobs)
            changes: dict[str, str | None] = {}
            unkept: list[str] = []
            for path, _, after, _, _ in entry.files:
                if after is None:
                    changes[path] = None
                elif after == _DIRECTORY:
                    continue
                elif after in blobs:
                    changes[path] = blobs[after]
                else:
                    unkept.append(path)
            run.index(changes)
            parent = run.commit(parent, entry.member or "outside", entry.team, entry.at, _message(entry, unkept))
        if parent:
            run("update-ref", f"refs/heads/{BRANCH}", parent)
            run("symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")
    finally:
        index.unlink(missing_ok=True)
    count = len(entries)
    return f"Exported {count} change{'' if count == 1 else 's'} to branch {BRANCH} of the git repository {dest}."


class _Git:
    """git commands on one repository, with a private index."""

    def __init__(self, git: str, repository: Path, index: Path) -> None:
        self.git = git
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_DIR": str(repository),
            "GIT_INDEX_FILE": str(index),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }

    def __call__(self, *args: str, stdin: bytes = b"", env: Mapping[str, str] | None = None) -> str:
        done = subprocess.run(
            [self.git, *args], input=stdin, capture_output=True, env={**self.env, **(env or {})}, check=False
        )
        if done.returncode != 0:
            raise ToolFailed(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[:500]}")
        return done.stdout.decode().strip()

    def index(self, changes: Mapping[str, str | None]) -> None:
        lines = []
        for path, blob in changes.items():
            if blob is None:
                lines.append(f"0 {'0' * 40}\t{path}")
            else:
                lines.append(f"100644 {blob}\t{path}")
        if lines:
            self("update-index", "-z", "--index-info", stdin="\0".join(lines).encode() + b"\0")

    def commit(self, parent: str, member: str, team: str, at: float, message: str) -> str:
        tree = self("write-tree")
        name = member.lstrip("@") or "outside"
        date = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
        identity = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": f"{name}@{team or 'workspace'}",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": "toolcards",
            "GIT_COMMITTER_EMAIL": "toolcards@workspace",
            "GIT_COMMITTER_DATE": date,
        }
        args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
        return self(*args, stdin=message.encode(), env=identity)


def _repository(git: str, dest: Path) -> Path:
    """``dest`` as a git directory: an existing repository's, or a bare one made there."""
    if (dest / "HEAD").is_file() and (dest / "objects").is_dir():
        return dest
    if (dest / ".git").is_dir():
        return dest / ".git"
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise RetriableError(
            f"{dest} is neither a git repository nor an empty directory: give a new or empty directory, or a "
            "git repository."
        )
    dest.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([git, "init", "--bare", "--quiet", str(dest)], capture_output=True, check=False)
    if done.returncode != 0:
        raise ToolFailed(f"git init failed: {done.stderr.decode(errors='replace').strip()[:500]}")
    return dest


def _seed(entries: Sequence[StoredEntry]) -> dict[str, Ref]:
    """Each path's content before the first entry that changed it (where one was there)."""
    seen: set[str] = set()
    seed: dict[str, Ref] = {}
    for entry in entries:
        for path, before, _, _, _ in entry.files:
            if path in seen:
                continue
            seen.add(path)
            if before is not None and before != _DIRECTORY and not before.startswith(_UNKEPT):
                seed[path] = before
    return seed


def _write_versions(journal: Journal, run: _Git, refs: Iterable[Ref], blobs: dict[str, str]) -> None:
    """Store each kept version of ``refs`` not stored yet as a git blob (``blobs``: digest → id)."""
    wanted = [
        ref
        for ref in dict.fromkeys(refs)
        if ref and ref != _DIRECTORY and not ref.startswith(_UNKEPT) and ref not in blobs and journal.is_kept(ref)
    ]
    for start in range(0, len(wanted), _BATCH):
        contents = journal.contents(wanted[start : start + _BATCH])
        for digest, data in contents.items():
            blobs[digest] = run("hash-object", "-w", "--stdin", stdin=data)


def _message(entry: StoredEntry, unkept: Sequence[str]) -> str:
    tool = entry.tool or "outside"
    task = f" (task {entry.task_id})" if entry.task_id is not None else ""
    lines = [f"{tool}{task}: {entry.summary}"[:200], ""]
    if entry.command:
        lines += [f"Command: {entry.command}", ""]
    if unkept:
        lines += [f"Not exported (too large to keep): {', '.join(unkept[:20])}", ""]
    if entry.undoes:
        lines.append(f"Undoes: {', '.join(map(str, entry.undoes))}")
    lines.append(f"Change: {entry.id}")
    return "\n".join(lines) + "\n"
