"""Whether a process that another one recorded (by pid) has ended.

Rows in a team's store outlive a process killed with ``kill -9``: its presence (a member on
the roster) and the commands it registered as running stay until their TTL or deadline runs
out. When the row names its process by pid *and* by :func:`machine_mark`, a reader on the same
machine can tell at once that the process is gone, instead of waiting out the TTL.

A pid means something only on the machine and in the pid namespace it was recorded in, so the
mark is the kernel's boot id and the pid namespace: rows of another host, another container or
an earlier boot never match it, and only their TTL decides. A pid reused since by another
process makes a dead one look alive, which errs on the side of waiting. Where there is no
``/proc`` (macOS), the mark is ``None`` and nothing is judged.
"""

from __future__ import annotations

import functools
import os

__all__ = ["machine_mark", "process_gone"]


@functools.cache
def machine_mark() -> str | None:
    """This process's machine and pid namespace, as rows record it; ``None`` when unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            boot_id = boot.read().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot_id}:{namespace}" if boot_id else None


def process_gone(mark: object, pid: object) -> bool:
    """Whether the process ``pid``, recorded with machine mark ``mark``, has certainly ended.

    ``False`` whenever it cannot be told: another machine or namespace, an old row without a
    mark, a pid that is not a positive integer, or a process that exists (any process: one the
    caller may not signal counts too).
    """
    here = machine_mark()
    if here is None or mark != here or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if pid == os.getpid():
        return False  # the caller decides whether the row is its own
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (EPERM: another user's)
    return False
