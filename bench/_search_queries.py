"""A labelled query set for ``workspace_search``: the Python standard library's documentation.

:func:`build_corpus` writes one file per module of :data:`LABELLED` and :data:`DISTRACTORS`
(``stdlib/<module>.txt``): the module's docstring, then a line per public function and
class with the first line of its docstring, all read from the running interpreter (public
text, nothing to download). Each query of :data:`LABELLED` describes what one module is for
in other words than its docstring's where possible; the answer is that module's file.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

__all__ = ["DISTRACTORS", "LABELLED", "build_corpus"]

LABELLED: dict[str, str] = {
    "compress bytes with the deflate algorithm": "zlib",
    "encode python objects as javascript object notation": "json",
    "read and write comma separated spreadsheet rows": "csv",
    "embedded sql database in a single file": "sqlite3",
    "priority queue with the smallest item first": "heapq",
    "insert into a sorted list and keep it in order": "bisect",
    "copy or remove a whole directory tree": "shutil",
    "make a scratch file that is deleted afterwards": "tempfile",
    "sha256 digest of some bytes": "hashlib",
    "keyed message authentication code": "hmac",
    "turn binary data into printable ascii": "base64",
    "print a month as a grid of days": "calendar",
    "shuffle a list and pick random samples": "random",
    "mean median and standard deviation of numbers": "statistics",
    "numbers as numerator over denominator": "fractions",
    "exact decimal arithmetic for money without rounding errors": "decimal",
    "permutations combinations and infinite iterators": "itertools",
    "cache the results of a function and partial application": "functools",
    "start a command as a child process and read its output": "subprocess",
    "low level network connections": "socket",
    "parse command line options and arguments": "argparse",
    "record diagnostic messages with severity levels": "logging",
    "serialize python objects to a byte stream": "pickle",
    "a dictionary that persists on disk": "shelve",
    "read and write tar archives": "tarfile",
    "open a zip archive and list its members": "zipfile",
    "wrap a paragraph of text to a given width": "textwrap",
    "show the differences between two lists of lines": "difflib",
    "generate universally unique identifiers": "uuid",
    "generate a hard to guess token for a password reset": "secrets",
    "find files matching a shell wildcard like *.txt": "glob",
    "duplicate an object deeply including nested objects": "copy",
    "utilities for with statements and resource cleanup": "contextlib",
    "abstract base classes and abstract methods": "abc",
    "manipulate ipv4 and ipv6 addresses and networks": "ipaddress",
    "read and write wav audio files": "wave",
    "convert colors between rgb and hsv": "colorsys",
    "print nested data structures readably": "pprint",
    "time how long a small snippet of code takes": "timeit",
    "get the source code and signature of a function": "inspect",
    "parse python source into a syntax tree": "ast",
    "guess the media type of a file from its name": "mimetypes",
    "split a string the way a unix shell would": "shlex",
    "run callbacks at a given time in the future": "sched",
    "send an email message through a mail server": "smtplib",
    "unix filename pattern matching": "fnmatch",
    "format dates and compute time differences": "datetime",
    "check the spelling of words close to a given one": "difflib",
}
"""Query → the module whose file answers it."""

DISTRACTORS = (
    "os",
    "sys",
    "io",
    "math",
    "cmath",
    "operator",
    "collections",
    "string",
    "struct",
    "codecs",
    "locale",
    "gettext",
    "array",
    "weakref",
    "types",
    "typing",
    "numbers",
    "threading",
    "queue",
    "selectors",
    "signal",
    "mmap",
    "email",
    "mailbox",
    "html",
    "xml",
    "webbrowser",
    "wsgiref",
    "ftplib",
    "poplib",
    "imaplib",
    "socketserver",
    "http",
    "unittest",
    "doctest",
    "pdb",
    "trace",
    "tracemalloc",
    "gc",
    "dis",
    "pickletools",
    "platform",
    "errno",
    "getpass",
    "tokenize",
    "keyword",
    "symtable",
    "stat",
    "filecmp",
    "linecache",
    "gzip",
    "bz2",
    "lzma",
    "configparser",
    "netrc",
    "plistlib",
    "quopri",
    "binascii",
    "enum",
    "graphlib",
    "reprlib",
    "warnings",
    "atexit",
    "traceback",
    "zoneinfo",
    "time",
    "pathlib",
    "re",
    "dataclasses",
    "pstats",
)
"""Modules written to the corpus that no query asks for."""


def _module_text(name: str) -> str | None:
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    lines = [f"Module {name}", ""]
    lines += (inspect.getdoc(module) or "").splitlines()
    lines.append("")
    for attribute in sorted(dir(module)):
        if attribute.startswith("_"):
            continue
        value = getattr(module, attribute, None)
        if not (inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value)):
            continue
        doc = (inspect.getdoc(value) or "").strip().splitlines()
        lines.append(f"{attribute}: {doc[0] if doc else ''}")
    return "\n".join(lines) + "\n"


def build_corpus(root: Path) -> dict[str, str]:
    """Write the corpus under ``root/stdlib``; returns each query's expected path."""
    target = root / "stdlib"
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(set(LABELLED.values()) | set(DISTRACTORS)):
        text = _module_text(name)
        if text is not None:
            (target / f"{name}.txt").write_text(text)
    return {query: f"stdlib/{name}.txt" for query, name in LABELLED.items() if (target / f"{name}.txt").exists()}
