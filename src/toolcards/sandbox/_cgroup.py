"""One cgroup per command: a pids limit (fork bombs) and a memory limit, then a clean kill.

``RLIMIT_NPROC`` does not bind root, so the process count of a command is capped with a
cgroup. The child joins its group before it execs (see :mod:`toolcards.sandbox._process`),
so nothing it starts can be outside it; at the end every process still in the group is
killed, including one that left the process group with ``setsid``, and the group is
removed.

Supported layouts, probed once per process:

* cgroup v1 (and the v1 controllers of a hybrid host): a directory under the ``pids``
  hierarchy and, if present and writable, one under ``memory``, each nested below the
  group this process already belongs to;
* cgroup v2, when the group this process belongs to delegates the ``pids`` controller to
  its children (``cgroup.subtree_control``).

Anything else (no permission, no controller) reports why in :func:`cgroup_support` and the
sandbox falls back to process limits only.

A group is named ``toolcards-<pid>-<n>`` after the process that made it. One killed before it
removed its groups (``kill -9``) leaves them behind, empty once its commands are gone; each
sandbox removes such groups when it starts (:func:`remove_stale_groups`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from toolcards.actors._process_liveness import machine_mark, process_gone

__all__ = ["CgroupSupport", "CommandCgroup", "cgroup_support", "remove_stale_groups"]

_ROOT = Path("/sys/fs/cgroup")
_GROUP_NAME = re.compile(r"toolcards-(?:probe-)?([1-9][0-9]{0,6})-[0-9]+")
"""A group this module makes (a command's, or the probe's), and the pid of the process that made it."""
_STALE_AFTER_S = 60.0
"""How old (by its directory's modification time, set when it is made) a group must be
before it may be removed.

A live process's group is empty only between its creation and the command joining it (a
moment) and between the command's end and its removal; the wait keeps a group whose owner
lives in another pid namespace, where its pid means nothing here, out of reach."""
_counter = itertools.count(1)
_probe_lock = threading.Lock()
_probed: CgroupSupport | None = None


@dataclass(frozen=True, kw_only=True)
class CgroupSupport:
    """Where command groups can be created on this host, or why they cannot."""

    version: int | None
    """1, 2, or ``None`` when commands cannot get their own cgroup."""
    parents: tuple[Path, ...] = ()
    """Directories new groups are created in: v1 pids (and memory) parents, or the v2 parent."""
    reason: str = ""
    """Why there is no support (empty when there is)."""


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per controller (``""`` is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                paths[controller] = path
    return paths


def _writable_parent(parent: Path) -> bool:
    probe = parent / f"toolcards-probe-{os.getpid()}-{next(_counter)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _probe() -> CgroupSupport:
    own = _own_paths()
    pids_v1 = _ROOT / "pids"
    if (pids_v1 / "cgroup.procs").exists() and "pids" in own:
        pids_parent = pids_v1 / own["pids"].lstrip("/")
        if not _writable_parent(pids_parent):
            return CgroupSupport(version=None, reason=f"cannot create cgroups under {pids_parent}")
        parents = [pids_parent]
        memory_v1 = _ROOT / "memory"
        if (memory_v1 / "cgroup.procs").exists() and "memory" in own:
            memory_parent = memory_v1 / own["memory"].lstrip("/")
            if _writable_parent(memory_parent):
                parents.append(memory_parent)
        return CgroupSupport(version=1, parents=tuple(parents))
    if (_ROOT / "cgroup.controllers").exists() and "" in own:
        parent = _ROOT / own[""].lstrip("/")
        try:
            delegated = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = []
        if "pids" not in delegated:
            return CgroupSupport(version=None, reason=f"the pids controller is not delegated to children of {parent}")
        if not _writable_parent(parent):
            return CgroupSupport(version=None, reason=f"cannot create cgroups under {parent}")
        return CgroupSupport(version=2, parents=(parent,))
    return CgroupSupport(version=None, reason="no cgroup pids controller is mounted")


def remove_stale_groups() -> list[Path]:
    """Remove the groups of dead processes that hold no process; return those removed.

    A group is removed only when its name is one this module gives, the process it names is
    gone (no process of that pid exists, so none can be using it), it holds no process, and
    it was made over :data:`_STALE_AFTER_S` ago. Anything else is left as it is: a live
    owner's groups, a group a survivor of a killed owner still runs in. Blocks for a
    directory listing per hierarchy; never raises.
    """
    removed: list[Path] = []
    now = time.time()
    for parent in cgroup_support().parents:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            match = _GROUP_NAME.fullmatch(entry.name)
            # The name's pid is read here as a pid of this machine and pid namespace; a
            # group of an owner elsewhere is kept out by its age (_STALE_AFTER_S).
            if match is None or not process_gone(machine_mark(), int(match.group(1))):
                continue
            path = Path(entry.path)
            try:
                made = entry.stat(follow_symlinks=False).st_mtime
                if not entry.is_dir(follow_symlinks=False) or now - made < _STALE_AFTER_S:
                    continue
                if (path / "cgroup.procs").read_text().strip():
                    continue
                path.rmdir()  # the kernel refuses a group that holds a process or a child group
            except OSError:
                continue
            removed.append(path)
    return removed


def cgroup_support() -> CgroupSupport:
    """Probe (once per process, cached) whether commands can get their own cgroup."""
    global _probed
    with _probe_lock:
        if _probed is None:
            _probed = _probe()
        return _probed


class CommandCgroup:
    """The cgroup of one command: created before spawn, killed and removed after.

    Not thread-safe; one command's worker thread owns it.
    """

    def __init__(self, support: CgroupSupport, dirs: tuple[Path, ...]) -> None:
        self._support = support
        self.dirs = dirs

    @classmethod
    def create(cls, max_processes: int, memory_bytes: int) -> CommandCgroup | None:
        """A new group with the limits set, or ``None`` when the host has no support.

        Raises:
            OSError: the group could not be created or limited (it is removed again).
        """
        support = cgroup_support()
        if support.version is None:
            return None
        name = f"toolcards-{os.getpid()}-{next(_counter)}"
        group = cls(support, ())
        dirs: list[Path] = []
        try:
            for parent in support.parents:
                path = parent / name
                path.mkdir()
                dirs.append(path)
                group.dirs = tuple(dirs)
                group._limit(path, max_processes, memory_bytes)
        except OSError:
            group.remove()
            raise
        return group

    def _limit(self, path: Path, max_processes: int, memory_bytes: int) -> None:
        if (path / "pids.max").exists():
            (path / "pids.max").write_text(str(max_processes))
        if self._support.version == 1 and (path / "memory.limit_in_bytes").exists():
            (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
            # Without swap accounting there is no memsw file; the plain limit still binds.
            with contextlib.suppress(OSError):
                (path / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if self._support.version == 2:
            with contextlib.suppress(OSError):
                (path / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The ``cgroup.procs`` files a child writes its pid to (one per hierarchy)."""
        return tuple(str(path / "cgroup.procs") for path in self.dirs)

    def _members(self) -> list[int]:
        pids: set[int] = set()
        for path in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(pid) for pid in (path / "cgroup.procs").read_text().split())
        return sorted(pids)

    def kill_all(self, deadline_s: float = 2.0) -> None:
        """SIGKILL every process in the group until it is empty (blocks up to ``deadline_s``).

        A fork bomb may keep forking while it is killed; the pids limit bounds how many
        rounds that takes.
        """
        if self._support.version == 2 and self.dirs and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        end = time.monotonic() + deadline_s
        while True:
            members = self._members()
            if not members or time.monotonic() > end:
                return
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    def limit_hits(self, max_processes: int, memory_mb: int) -> list[str]:
        """Sentences naming the cgroup limits the command ran into (empty if none)."""
        notes: list[str] = []
        for path in self.dirs:
            events = _read_counters(path / "pids.events")
            if events.get("max", 0) > 0:
                notes.append(
                    f"process limit reached: a fork failed {events['max']} times "
                    f"(at most {max_processes} processes per command)"
                )
            oom = _read_counters(path / "memory.oom_control").get("oom_kill", 0)
            oom += _read_counters(path / "memory.events").get("oom_kill", 0)
            if oom > 0:
                notes.append(f"memory limit reached: {oom} process(es) killed (limit {memory_mb} MB)")
        return notes

    def remove(self) -> None:
        """Remove the group's directories (kill first). Never raises; retries briefly."""
        for path in reversed(self.dirs):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = ()


def _read_counters(path: Path) -> dict[str, int]:
    counters: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                counters[key] = int(value)
    return counters
