"""Running ripgrep over a base directory or file and parsing its output as it comes.

ripgrep prints at most 4,096 bytes of a matching line (``--max-columns`` with a preview), so
its output grows with the number of matching lines, never with their length; the pattern is
handed to it as ``(?:pattern)[^\\n]*``, which matches once per line. At most
:data:`~toolcards.workspace._grep_limits.MAX_GREP_OUTPUT_BYTES` of the output are read; past
that ripgrep is stopped and the answer says the results were cut. It starts in the base
through the base's open descriptor, so a swap of the base's path cannot redirect it; what
lies below is opened by name, so the lines shown are read again from the tree
(:mod:`toolcards.workspace._grep_reread`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

from toolcards.core._deadline import check_deadline
from toolcards.core._progress import report_progress
from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._glob import MAX_WALK_DEPTH, check_glob
from toolcards.workspace._grep_found import Found
from toolcards.workspace._grep_limits import MAX_GREP_OUTPUT_BYTES, RG_TIMEOUT_S
from toolcards.workspace._paths import SKIPPED_DIRS
from toolcards.workspace._searched_text import CHUNK_BYTES
from toolcards.workspace._tree import Directory, OpenFile

__all__ = ["RG_MAX_COLUMNS", "find_rg", "search_rg"]

RG_MAX_COLUMNS = 4096
"""Bytes of a matching line ripgrep prints; a longer line is cut to a preview of this size."""


_IDLE_WAIT_S = 0.02
"""How long ripgrep's pipes go unread at most while it writes little (see :func:`_collect`)."""


_PIPE_BYTES = 1024 * 1024
"""What ripgrep's output pipe is enlarged to where Linux allows: what it can write between two reads."""


_WATCH_ABOVE_BYTES = 32 * 1024
"""A wake that finds this much written watches the pipes until one finds less (see :func:`_collect`)."""


_RG_REGEX_SIZE_LIMIT = "4M"
"""The largest compiled pattern ripgrep accepts; a larger one is refused as too large."""


_TO_LINE_END = r"[^\n]*"
"""Appended to the pattern given to ripgrep so that it matches once per line (see the module docstring)."""


@functools.cache
def find_rg() -> str | None:
    """The ripgrep executable: the one next to ``sys.executable`` first, else on ``PATH``.

    Returns ``None`` when there is none. The answer is cached for the process.
    """
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("rg", path=search)


def _prefilter_globs(include: str) -> list[str]:
    """Globs on file names that ripgrep can apply to skip files ``include`` rejects anyway.

    Only alternatives whose last segment is plain text with ``*``/``?`` qualify; when one
    does not, no prefilter is used. Each is spelled in every case ``include`` matches
    (:func:`_any_case`) and given as a case-sensitive ``--glob``: ripgrep applies every
    ``--iglob`` after every ``--glob``, so a case-insensitive one would come after the
    globs that keep the skipped folders out, and open them when it matches their names.
    """
    if not include.strip():
        return []
    globs = []
    for alternative in check_glob(include):
        last = alternative.rstrip("/").rpartition("/")[2]
        if not last or last == "**" or not re.fullmatch(r"[^\[\]{}\\!]+", last):
            return []
        globs.append(_any_case(last))
    return globs


_CASE_PARTNERS = {"i": "iI\u0130\u0131", "k": "kK\u212a", "s": "sS\u017f"}
"""ASCII letters that Python's case-insensitive ``re`` also matches to a non-ASCII letter,
with every letter they match; any other ASCII letter matches itself and its other case."""


def _any_case(segment: str) -> str:
    """A glob matching at least every name ``segment`` (plain text with ``*``/``?``) matches
    case-insensitively, as ``include`` is matched.

    It may match more (a non-ASCII character stands for any one character): the files
    ripgrep reports are checked against ``include`` again.
    """
    spelled = []
    for char in segment:
        if not char.isascii():
            spelled.append("?")
        elif char.isalpha():
            lower = char.lower()
            spelled.append(f"[{_CASE_PARTNERS.get(lower, lower + lower.upper())}]")
        else:
            spelled.append(char)
    return "".join(spelled)


_NOTICE_END = re.compile(
    rb": (?:WARNING: stopped searching binary file after match|binary file matches) "
    rb'\(found "\\0" byte around offset \d+\)\n'
)
"""The end of ripgrep's note that a file is binary (``PATH: ...``), printed after the lines
it matched before the NUL."""


_WHOLE_RECORD = re.compile(rb"([^\0]*)\0(\d+):(\d+):(?:(\d+):)?([^\n]*)\n")
"""A whole record: what precedes its NUL (binary notes, then its path), line number,
column, byte offset, text.

ripgrep leaves the column out for an empty match at the end of a last line that has no
line break (and then ends the text with a stray ``\r`` under ``--crlf``): the second
number is then the offset.
"""


def search_rg(
    rg: str,
    *,
    rust_pattern: str,
    base: Directory | OpenFile,
    named: str,
    include: str,
    accepts: Callable[[str], bool] | None,
    found: Found,
    files: list[str] | None = None,
) -> None:
    """Search ``base`` with ripgrep; only ``files`` (paths relative to ``base``) when given."""
    command = [
        rg,
        "--no-config",
        "--no-mmap",
        "--encoding",
        "utf-8",
        "--crlf",
        "--no-ignore",
        "--hidden",
        "--no-messages",
        "--null",
        "--with-filename",
        "--line-number",
        "--column",
        "--byte-offset",
        "--no-heading",
        "--color",
        "never",
        "--max-columns",
        str(RG_MAX_COLUMNS),
        "--max-columns-preview",
        "--max-depth",
        str(MAX_WALK_DEPTH),
        # A pattern near ripgrep's default limit (10 MB) is slow to compile and needs ~100 MB;
        # 4 MB bounds both (docs/benchmarks.md).
        "--regex-size-limit",
        _RG_REGEX_SIZE_LIMIT,
    ]
    # ripgrep's own thread count: measured on two cores over 1,000 and 10,000 files, its
    # default was faster than --threads 1 at both sizes.
    for name_glob in _prefilter_globs(include):
        command += ["--glob", name_glob]
    # Last: the last glob that matches a path decides, so an include that also matches a
    # skipped folder's name ("*", ".*") must come before these, or it would open the folder.
    for name in sorted(SKIPPED_DIRS):
        command += ["--glob", f"!{name}/"]
    # ripgrep reaches the base through the descriptor already open on it (its working
    # directory, or the file's /proc entry), so a swap of the base's path cannot redirect
    # it; what lies below is opened by name (see the module docstring).
    handle = f"/proc/self/fd/{base.fd}"
    if not os.path.exists(handle):
        handle = named
    is_file = isinstance(base, OpenFile)
    target, cwd = (handle, "/") if is_file else (".", handle)
    command += ["--regexp", f"(?:{rust_pattern}){_TO_LINE_END}", "--"]
    command += [target] if files is None else [f"./{rel}" for rel in files]
    output = _RgOutput(os.fsencode(target), base.rel, is_file, accepts, found)
    stderr = bytearray()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        pass_fds=(base.fd,),
    )
    stop_at = time.monotonic() + RG_TIMEOUT_S
    timed_out = False
    try:
        timed_out = not _collect(process, output, stderr, stop_at)
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if timed_out:
        raise RetriableError(f"The search ran past {RG_TIMEOUT_S:g} s and was stopped. Narrow it with path or include.")
    output.finish()
    if code not in (0, 1) and not found.cut and not found.lines:
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        message = lines[0] if lines else f"exit code {code}"
        if "size limit" in message:
            raise RetriableError(
                f"The pattern is too large for ripgrep once compiled ({message}): use smaller repetition "
                "counts or fewer alternatives."
            )
        raise ToolFailed(f"ripgrep failed: {message}")


def _collect(process: subprocess.Popen[bytes], output: _RgOutput, stderr: bytearray, stop_at: float) -> bool:
    """Read ripgrep's output into ``output`` and the start of its errors into ``stderr``.

    Returns when both pipes ended or the output was cut, or False when ``stop_at``
    passed first. Raises ToolTimeout when the call's deadline passes.

    Where the kernel tells when ripgrep exits (a pidfd), the pipes are not watched while
    little is written: ripgrep writes each file's lines as it finishes the file, and
    waking for every write (one per matching file) cost this process more CPU than
    everything else it does in a search, on the same two cores ripgrep searches with. It
    is woken by the exit, or every :data:`_IDLE_WAIT_S` to empty the pipes (enlarged to
    :data:`_PIPE_BYTES`, so ripgrep rarely waits for a read), and watches them again
    while a wake finds much written.
    """
    assert process.stdout is not None
    assert process.stderr is not None
    out = process.stdout.fileno()
    pipes = {out, process.stderr.fileno()}
    for fd in pipes:
        os.set_blocking(fd, False)
    exit_fd = _exit_handle(process.pid)
    if exit_fd is not None:
        # Linux's limits (fs.pipe-max-size, a user's pipe pages) may refuse: the pipe keeps
        # its 64 KB, and a search writing more than that between two reads waits for one.
        with contextlib.suppress(OSError):
            fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    try:
        with _Wakes(exit_fd, pipes) as wakes:
            started = time.monotonic()
            while pipes:
                check_deadline()
                now = time.monotonic()
                if now - started >= 1.0:  # a long search: a caller that listens hears it goes on
                    report_progress(round(now - started, 1), None, f"searching for {now - started:.0f} s")
                left = stop_at - time.monotonic()
                if left <= 0:
                    return False
                wakes.wait(left)
                read = 0
                for fd in sorted(pipes):
                    count = _drain(fd, output if fd == out else None, stderr)
                    if output.cut:
                        return True
                    if count is None:
                        wakes.ended(fd)
                    else:
                        read += count
                wakes.watch(not wakes.running or read >= _WATCH_ABOVE_BYTES)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    return True


class _Wakes:
    """What wakes the reading of ripgrep's pipes: its exit, its pipes while watched, or the idle wait.

    Without a pidfd (``exit_fd`` None), or once ripgrep is gone, the pipes are watched.
    ``pipes`` is shared with the caller; :meth:`ended` removes a pipe from it.
    """

    def __init__(self, exit_fd: int | None, pipes: set[int]) -> None:
        self._selector = selectors.DefaultSelector()
        self._exit_fd = exit_fd
        self.pipes = pipes
        self.running = exit_fd is not None
        if exit_fd is not None:
            self._selector.register(exit_fd, selectors.EVENT_READ)
        self.watching = False
        self.watch(not self.running)

    def __enter__(self) -> _Wakes:
        return self

    def __exit__(self, *_: object) -> None:
        self._selector.close()

    def wait(self, left: float) -> None:
        """Wait for a wake, at most ``left`` seconds; note ripgrep's exit when it is one."""
        ready = self._selector.select(min(left, 0.25 if self.watching else _IDLE_WAIT_S))
        if self._exit_fd is not None and self.running and any(key.fd == self._exit_fd for key, _ in ready):
            self._selector.unregister(self._exit_fd)
            self.running = False

    def ended(self, fd: int) -> None:
        """The pipe ``fd`` ended (or the output was cut)."""
        self.pipes.discard(fd)
        if self.watching:
            self._selector.unregister(fd)

    def watch(self, wanted: bool) -> None:
        """Watch the pipes, or stop watching them."""
        if wanted == self.watching:
            return
        for fd in self.pipes:
            if wanted:
                self._selector.register(fd, selectors.EVENT_READ)
            else:
                self._selector.unregister(fd)
        self.watching = wanted


def _drain(fd: int, output: _RgOutput | None, stderr: bytearray) -> int | None:
    """Read what a pipe holds now into ``output`` (or, for None, the first 4 KB of it into ``stderr``).

    Returns how many bytes were read, or None when the pipe ended or the output was cut.
    """
    read = 0
    while True:
        try:
            data = os.read(fd, CHUNK_BYTES)
        except BlockingIOError:
            return read
        if not data:
            return None
        read += len(data)
        if output is None:
            stderr += data[: max(0, 4096 - len(stderr))]
        elif not output.feed(data):
            return None


def _exit_handle(pid: int) -> int | None:
    """A descriptor that becomes readable when process ``pid`` exits (Linux's pidfd), or None."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


class _RgOutput:
    """ripgrep's output (``--null --column``), parsed record by record as it arrives.

    A record is ``PATH NUL LINE:COLUMN:OFFSET:TEXT LF``; a binary file's note,
    ``PATH: ... binary file ... LF``, follows the records of that file. Paths may hold
    any byte but NUL (a newline too), texts none of NUL and LF.
    """

    def __init__(
        self, base_path: bytes, base_rel: str, is_file: bool, accepts: Callable[[str], bool] | None, found: Found
    ) -> None:
        self._base_path = base_path
        self._below = base_path + b"/"
        self._base_rel = base_rel
        self._is_file = is_file
        self._accepts = accepts
        self._found = found
        self._pending = bytearray()
        self._read = 0
        self._path: bytes | None = None
        self._rel: str | None = None

    def feed(self, data: bytes) -> bool:
        """Take what ripgrep wrote next; False once :data:`MAX_GREP_OUTPUT_BYTES` were read."""
        self._read += len(data)
        if self._read > MAX_GREP_OUTPUT_BYTES:
            data = data[: len(data) - (self._read - MAX_GREP_OUTPUT_BYTES)]
            self._found.cut = True
        self._pending += data
        self._parse()
        return not self._found.cut

    @property
    def cut(self) -> bool:
        """More than :data:`MAX_GREP_OUTPUT_BYTES` were written: the rest is not read."""
        return self._found.cut

    def finish(self) -> None:
        """ripgrep's output ended (or was cut): close the last file."""
        if not self._found.cut:
            self._parse(final=True)
        self._found.end_file()

    def _parse(self, *, final: bool = False) -> None:
        pending = self._pending
        position = 0
        whole = _WHOLE_RECORD.match
        found = self._found
        while True:
            # Nearly every record is whole and well formed: one match takes it apart.
            record = whole(pending, position)
            if record is None:
                # A record cut at the end of what arrived so far, or one whose numbers do
                # not parse (skipped, as ripgrep never prints one).
                nul = pending.find(b"\0", position)
                if nul < 0:
                    break
                end = pending.find(b"\n", nul)
                if end < 0:
                    break
                self._after_notes(bytes(pending[position:nul]))
                position = end + 1
                continue
            position = record.end()
            path, number, second, third, text = record.groups()
            if b"binary file" in path:  # as _after_notes checks first, saving the call
                path = self._after_notes(path)
            if path != self._path:
                self._begin(path)
            if self._rel is not None:
                found.add(int(number), (text, second, third))
        if final:
            self._after_notes(bytes(pending[position:]))
            position = len(pending)
        del pending[:position]

    def _after_notes(self, head: bytes) -> bytes:
        """What follows the binary notes at the start of ``head`` (the text before a record's NUL).

        A note ends where the next record's path starts, which begins with the base's path,
        or at the end of the output. A name cannot hold a ``/``, so a file named like a
        note cannot pass for one.
        """
        if b"binary file" not in head:  # every note says so; most heads are a plain path
            return head
        start = 0
        while True:
            for note in _NOTICE_END.finditer(head, start):
                rest = head[note.end() :]
                if not rest or rest.startswith(self._base_path):
                    if head[start : note.start()] == self._path:
                        self._found.drop_file()
                        self._path = self._rel = None
                    start = note.end()
                    break
            else:
                return head[start:]

    def _begin(self, path: bytes) -> None:
        """The records of another file start: end the last one, begin this one if it is shown."""
        self._path = path
        rel = self._rel_of(path)
        if rel is not None and (self._accepts is None or self._accepts(rel)):
            self._found.begin_file(rel)  # which ends the last one
        else:
            self._found.end_file()
            rel = None
        self._rel = rel

    def _rel_of(self, path: bytes) -> str | None:
        """The root-relative path of a path ripgrep printed (None if it is not below the base,
        or lies in a skipped folder below it: the globs keep ripgrep out, this keeps the answer
        out whatever globs ripgrep was given)."""
        if self._is_file:
            return self._base_rel if path == self._base_path else None
        if not path.startswith(self._below):
            return None
        below = os.fsdecode(path[len(self._below) :])
        if not SKIPPED_DIRS.isdisjoint(below.split("/")[:-1]):
            return None
        return below if self._base_rel == "." else f"{self._base_rel}/{below}"
