"""Where a team lives: the one lookup order every command and the library follow.

A team is found at two locations, its **store** (a SQLite file, a ``postgresql://`` URL or
``:memory:``) and its **workspaces root** (its trees and ``.toolcards/``). Each is taken from
the first step that names it: explicit (``--store`` / ``--root``, :func:`use_locations`), the
environment (``TOOLCARDS_STORE``, ``TOOLCARDS_WORKSPACES_ROOT``), the project file
(:data:`CONFIG_FILE` in the working directory or its nearest parent holding one), the legacy
``./workspaces`` holding ``.toolcards`` (with a note on stderr once per process), then the
per-user directory (``$XDG_DATA_HOME/toolcards/workspaces``, else
``~/.local/share/toolcards/workspaces``). ``docs/architecture.md`` ("Where a team lives")
describes each step.

**The store follows its root**: a step naming a root and no store puts the store at
``<root>/.toolcards/state.db``, so ``--root DIR`` alone means the team kept in ``DIR``.

**The project file** is TOML with two optional keys, ``root`` (default ``"workspaces"``) and
``store`` (default ``<root>/.toolcards/state.db``, or a ``postgresql://`` URL); relative paths
are resolved against the file's directory, ``~`` is expanded, and any other key is refused (a
misspelt key would otherwise silently pick another team). A project file always decides both
locations, so an empty one means "this project's team lives in ./workspaces here".

Nothing here creates anything: :func:`locate` only says where; creating a store where nothing
was found is the caller's choice (commands that read a team refuse, naming every step:
:meth:`Lookup.trail_text`). The answer is cached per process for the explicit choice, the
environment and the working directory, so a process that writes a project file calls
:func:`forget_lookup`.
"""

from __future__ import annotations

import enum
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from toolcards.errors import WiringError

__all__ = [
    "CONFIG_FILE",
    "CONFIG_KEYS",
    "LEGACY_ROOT",
    "ROOT_ENV",
    "STORE_ENV",
    "Lookup",
    "Step",
    "config_values",
    "default_store_of",
    "find_config",
    "forget_lookup",
    "locate",
    "masked",
    "use_locations",
    "user_data_dir",
]

CONFIG_FILE = "toolcards.toml"
"""The project file's name, looked for in the working directory and each of its parents."""

CONFIG_KEYS = ("root", "store")
"""The keys a project file may hold."""

STORE_ENV = "TOOLCARDS_STORE"
ROOT_ENV = "TOOLCARDS_WORKSPACES_ROOT"
LEGACY_ROOT = "workspaces"
"""The workspaces root earlier versions used, relative to the working directory."""

_INTERNAL = ".toolcards"
_STATE_DB = "state.db"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class Step(enum.StrEnum):
    """A step of the lookup, in order; the value is how ``toolcards info --json`` names it."""

    EXPLICIT = "explicit"
    """``--store`` / ``--root``, or :func:`use_locations`."""
    ENVIRONMENT = "environment"
    """``TOOLCARDS_STORE`` / ``TOOLCARDS_WORKSPACES_ROOT``."""
    PROJECT = "project"
    """A ``toolcards.toml`` in the working directory or a parent."""
    LEGACY = "legacy"
    """``./workspaces`` holding toolcards' files, in the working directory."""
    USER = "user"
    """The per-user data directory."""


@dataclass(frozen=True, kw_only=True)
class Lookup:
    """Where the team lives, and how the lookup got there."""

    store: str
    """The store's location: an absolute file path, a URL (as given) or ``:memory:``."""
    store_step: Step
    """The step that decided the store (for a store that follows its root, the root's step)."""
    store_reason: str
    """What decided the store, in a few words: ``--store``, ``TOOLCARDS_WORKSPACES_ROOT``, the
    project file's path, ``./workspaces``, ``the per-user directory``."""
    root: Path
    """The workspaces root, absolute with symlinks resolved; it may not exist yet."""
    root_step: Step
    """The step that decided the root."""
    config: Path | None
    """The project file found, when the lookup reached that step (whether or not it decided
    anything); else ``None``."""
    trail: tuple[tuple[Step, str], ...]
    """Each step looked at, in order, up to the last one that decided something, with what
    it found (passwords masked)."""

    @property
    def store_file(self) -> Path | None:
        """The store's SQLite file, or ``None`` for a PostgreSQL or in-memory store."""
        if self.store == ":memory:":
            return None
        match = _URL.match(self.store)
        if match is None:
            return Path(self.store)
        if self.store.lower().startswith("sqlite://"):
            return Path(os.path.abspath(os.path.expanduser(self.store[len("sqlite://") :])))
        return None

    def chosen_by(self, step: Step) -> str:
        """What ``step`` found, as the trail says it (``""`` when it was not looked at)."""
        return next((found for where, found in self.trail if where is step), "")

    def trail_text(self) -> str:
        """The trail on one line: ``1. explicit (--store, --root): not given; 2. ...``."""
        return "; ".join(f"{index}. {found}" for index, (_, found) in enumerate(self.trail, 1))


def use_locations(*, store: str | os.PathLike[str] | None = None, root: str | os.PathLike[str] | None = None) -> None:
    """Choose the store and/or the workspaces root for this process: the explicit step.

    What ``--store`` and ``--root`` do on the command line; a program calls it before its
    first team (``toolcards.Team``, ``default_store()``, a workspace card) needs them.
    Relative paths are taken from the working directory now. ``use_locations()`` drops an
    earlier choice. The environment is not changed: a program that starts other
    toolcards processes passes the locations on itself (the command line exports them).
    """
    global _explicit
    with _lock:
        cwd = os.getcwd()
        _explicit = (
            None if store is None else _store_value(os.fspath(store), cwd),
            None if root is None else _path_value(os.fspath(root), cwd),
        )
        _cache.clear()


def forget_lookup() -> None:
    """Look again at the next :func:`locate`: for a process that wrote a project file, and tests."""
    with _lock:
        _cache.clear()


def locate() -> Lookup:
    """Where this process's team lives (see the module docstring for the order).

    Cached per explicit choice, environment and working directory. The first answer that
    lands on the legacy ``./workspaces`` writes one note to stderr, once per process.

    Raises:
        WiringError: the project file found cannot be read, is not TOML, or holds a key or
            value it may not; or the per-user directory is reached and no home directory
            can be found. The message names the file or the variable and the fix.
    """
    explicit = _explicit
    env_store, env_root = os.environ.get(STORE_ENV) or None, os.environ.get(ROOT_ENV) or None
    # The working directory matters unless the root is named by an absolute path before the
    # project file (the common case for servers and tests): no system call then.
    named_root = explicit[1] or env_root
    settled = named_root is not None and os.path.isabs(os.path.expanduser(named_root)) and not _relative(env_store)
    cwd = "" if settled else os.getcwd()
    key = (explicit, env_store, env_root, cwd, os.environ.get("XDG_DATA_HOME"), os.environ.get("HOME"))
    found = _cache.get(key)
    if found is None:
        found = _look(explicit, env_store, env_root, cwd)
        with _lock:
            _cache[key] = found
    if found.root_step is Step.LEGACY:
        _note_legacy(found.root)
    return found


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The project file of ``start`` (default: the working directory): ``toolcards.toml`` there
    or in the nearest parent directory holding one; ``None`` when none does."""
    directory = Path(os.path.abspath(start if start is not None else os.getcwd()))
    for candidate in (directory, *directory.parents):
        path = candidate / CONFIG_FILE
        if path.is_file():
            return path
    return None


def config_values(path: Path) -> dict[str, str]:
    """The locations a project file names, resolved: ``root`` always (default
    ``<its directory>/workspaces``), ``store`` when it names one.

    Raises:
        WiringError: the file cannot be read, is not TOML, or holds a key other than
            ``root`` and ``store``, or a value that is not a non-empty string.
    """
    import tomllib  # only where a project file is found

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WiringError(f"Project file {path} cannot be read ({exc.strerror or exc}). Fix its permissions.") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise WiringError(
            f"Project file {path} is not valid TOML ({exc}). It holds at most two keys, e.g. "
            'root = "workspaces" and store = "workspaces/.toolcards/state.db".'
        ) from exc
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise WiringError(
            f"Project file {path} has unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"it may hold only {' and '.join(CONFIG_KEYS)}. Correct the spelling or remove the key."
        )
    for name, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise WiringError(
                f"Project file {path}: {name} must be a non-empty string (a path, or for store a "
                f"postgresql:// URL or :memory:), not {value!r}."
            )
    base = path.parent
    values = {"root": str(_against(base, data.get("root", LEGACY_ROOT)))}
    if "store" in data:
        store = data["store"].strip()
        values["store"] = store if _URL.match(store) or store == ":memory:" else str(_against(base, store))
    return values


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/toolcards`` when ``XDG_DATA_HOME`` is absolute, else
    ``~/.local/share/toolcards`` (the XDG base directory rule; nothing is created).

    Raises:
        WiringError: neither ``XDG_DATA_HOME`` nor a home directory can be found.
    """
    configured = os.environ.get("XDG_DATA_HOME", "")
    if os.path.isabs(configured):
        return Path(configured) / "toolcards"
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        raise WiringError(
            "No home directory for the per-user team location: set HOME or XDG_DATA_HOME, or name the "
            f"team's location with {ROOT_ENV} (or --root) or a {CONFIG_FILE}."
        )
    return Path(home) / ".local" / "share" / "toolcards"


def default_store_of(root: Path) -> str:
    """The store a root holds when nothing else names one: ``<root>/.toolcards/state.db``."""
    return str(root / _INTERNAL / _STATE_DB)


def masked(location: str) -> str:
    """``location`` safe to print: a URL's password is replaced by ``***``."""
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", location)


# -- the lookup ------------------------------------------------------------------------------

_lock = threading.Lock()
_explicit: tuple[str | None, str | None] = (None, None)
_cache: dict[tuple[object, ...], Lookup] = {}
_noted: set[Path] = set()


def _look(explicit: tuple[str | None, str | None], env_store: str | None, env_root: str | None, cwd: str) -> Lookup:
    trail: list[tuple[Step, str]] = []
    store: tuple[str, Step, str] | None = None
    root: tuple[Path, Step] | None = None
    config: Path | None = None

    def take(step: Step, named_store: str | None, named_root: str | None, why: tuple[str, str]) -> None:
        # A step naming a root and no store decides the store too: the store follows its root.
        nonlocal store, root
        resolved = None if named_root is None else Path(named_root).resolve()
        if root is None and resolved is not None:
            root = (resolved, step)
        if store is None and named_store is not None:
            store = (named_store, step, why[0])
        elif store is None and resolved is not None:
            store = (default_store_of(resolved), step, why[1])

    ex_store, ex_root = explicit
    trail.append(
        (Step.EXPLICIT, _found("explicit (--store, --root)", "not given", ex_store, ex_root, "--store ", "--root "))
    )
    take(Step.EXPLICIT, ex_store, ex_root, ("--store", "--root"))
    if store is None or root is None:
        label = f"environment ({STORE_ENV}, {ROOT_ENV})"
        trail.append((Step.ENVIRONMENT, _found(label, "not set", env_store, env_root, f"{STORE_ENV}=", f"{ROOT_ENV}=")))
        cwd = cwd or os.getcwd()
        take(Step.ENVIRONMENT, _store_value(env_store, cwd), _path_value(env_root, cwd), (STORE_ENV, ROOT_ENV))
    if store is None or root is None:
        cwd = cwd or os.getcwd()
        config = find_config(cwd)
        if config is None:
            trail.append((Step.PROJECT, f"project file: no {CONFIG_FILE} in {cwd} or its parents"))
        else:
            trail.append((Step.PROJECT, f"project file: {config}"))
            values = config_values(config)
            take(Step.PROJECT, values.get("store"), values["root"], (str(config), str(config)))
    if root is None:
        legacy = Path(cwd or os.getcwd()) / LEGACY_ROOT
        if (legacy / _INTERNAL).is_dir():
            trail.append((Step.LEGACY, f"./{LEGACY_ROOT}: {legacy} (where earlier versions kept every team)"))
            take(Step.LEGACY, None, str(legacy), ("", f"./{LEGACY_ROOT}"))
        else:
            trail.append((Step.LEGACY, f"./{LEGACY_ROOT}: {legacy / _INTERNAL} does not exist"))
    if root is None:
        user = user_data_dir() / LEGACY_ROOT
        trail.append((Step.USER, f"per-user directory: {user}"))
        take(Step.USER, None, str(user), ("", "the per-user directory"))
    assert store is not None and root is not None  # the per-user step always names a root
    return Lookup(
        store=store[0],
        store_step=store[1],
        store_reason=store[2],
        root=root[0],
        root_step=root[1],
        config=config,
        trail=tuple(trail),
    )


def _found(label: str, nothing: str, store: str | None, root: str | None, store_name: str, root_name: str) -> str:
    named = [f"{name}{masked(value)}" for name, value in ((store_name, store), (root_name, root)) if value]
    return f"{label}: {', '.join(named) or nothing}"


def _store_value(value: str | None, cwd: str) -> str | None:
    if value is None or _URL.match(value) or value == ":memory:":
        return value
    return str(_against(Path(cwd), value))


def _path_value(value: str | None, cwd: str) -> str | None:
    return None if value is None else str(_against(Path(cwd), value))


def _against(base: Path, value: str) -> Path:
    """``value`` (``~`` expanded) as an absolute path, relative to ``base``."""
    return Path(os.path.normpath(base / os.path.expanduser(value)))


def _relative(store: str | None) -> bool:
    """Whether ``store`` is a file path relative to the working directory."""
    if store is None or _URL.match(store) or store == ":memory:":
        return False
    return not os.path.isabs(os.path.expanduser(store))


def _note_legacy(root: Path) -> None:
    # Said once per process: earlier versions used this directory silently, and its users
    # keep their team; the note says how to keep it from any directory.
    with _lock:
        if root in _noted:
            return
        _noted.add(root)
    print(
        f"toolcards: using the team in {root}, found as ./{LEGACY_ROOT} in the working directory (where earlier "
        f"versions kept it). Make this explicit with 'toolcards init' here (it writes a {CONFIG_FILE} that "
        f"keeps using it, from this directory and below) or {ROOT_ENV}={root}.",
        file=sys.stderr,
        flush=True,
    )
