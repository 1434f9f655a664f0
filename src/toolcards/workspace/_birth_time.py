"""When a file was created, where the system records it: :func:`birth_time`.

``os.stat`` gives no creation time on Linux before Python 3.12's ``st_birthtime`` (and not
there either); the kernel's ``statx`` does, on the file systems that keep one (ext4, btrfs,
xfs, tmpfs). It is called through the C library, relative to a directory handle, never
following a link. Elsewhere ``st_birthtime`` is used where ``os`` offers it.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["birth_time"]

_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_BTIME = 0x800
_STATX_SIZE = 256
_BTIME_OFFSET = 80
"""``struct statx``: ``stx_mask`` at 0, ``stx_btime`` (``int64`` seconds, ``uint32`` ns) at 80."""

_statx: Callable[..., int] | None = None
_looked_up = False


def birth_time(dir_fd: int, name: str) -> float | None:
    """The creation time of ``name`` in the directory ``dir_fd`` (seconds since the epoch),
    or ``None`` where the system or the file system does not record it."""
    function = _function()
    if function is None:
        try:
            created = getattr(os.lstat(name, dir_fd=dir_fd), "st_birthtime", None)
        except OSError:
            return None
        return float(created) if created is not None else None
    import ctypes

    buffer = ctypes.create_string_buffer(_STATX_SIZE)
    if function(dir_fd, os.fsencode(name), _AT_SYMLINK_NOFOLLOW, _STATX_BTIME, buffer) != 0:
        return None
    (mask,) = struct.unpack_from("=I", buffer, 0)
    if not mask & _STATX_BTIME:
        return None
    seconds, nanoseconds = struct.unpack_from("=qI", buffer, _BTIME_OFFSET)
    return float(seconds + nanoseconds / 1e9)


def _function() -> Callable[..., int] | None:
    global _statx, _looked_up
    if _looked_up:
        return _statx
    _looked_up = True
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    function: Any = getattr(ctypes.CDLL(None, use_errno=True), "statx", None)
    if function is None:
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_char_p)
    function.restype = ctypes.c_int
    _statx = function
    return _statx
