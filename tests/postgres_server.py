"""A real, throwaway PostgreSQL server for the tests: started from Debian's binaries, never mocked.

``start_server()`` runs ``initdb`` in a fresh temporary directory and starts ``postgres``
on ``127.0.0.1`` at a free port, with ``fsync=off`` (the tests never survive a power loss)
and ``trust`` authentication for the ``postgres`` superuser. As root (``initdb`` refuses
root) the binaries run as the ``postgres`` system user, in a directory chowned to it.
Start-up takes about a second; the fixtures in ``tests/conftest.py`` start one per session.

Each test gets a schema of its own in the ``toolcards`` database
(:meth:`PostgresServer.create_schema`): its URL carries ``options=-csearch_path=<schema>``,
so every process handed the URL (``TOOLCARDS_STORE``) sees exactly that test's tables, and
``application_name=<schema>``, so the sessions a killed child left behind can be ended
before the schema is dropped. Measured on two busy cores, a schema plus the store creating
its tables costs ~40 ms a test, a fresh database (``CREATE DATABASE``, also offered, by
:meth:`PostgresServer.create_database`) ~240 ms.

When the server cannot start, :class:`PostgresUnavailable` says why in one line, with how
to get it; the fixtures turn it into a skip.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["SCHEMA_DATABASE", "PostgresServer", "PostgresUnavailable", "find_bin_dir", "start_server"]

SCHEMA_DATABASE = "toolcards"
"""The database holding the per-test schemas; created when the server starts."""

INSTALL_HINT = "install it with `apt-get install postgresql` (Debian/Ubuntu) to run the PostgreSQL tests"


class PostgresUnavailable(Exception):
    """The test server cannot be started; the message is one line saying why and what to do."""


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` holding ``initdb`` and ``pg_ctl``, if any."""
    candidates = []
    for bin_dir in Path("/usr/lib/postgresql").glob("*/bin"):
        if (bin_dir / "initdb").is_file() and (bin_dir / "pg_ctl").is_file():
            with contextlib.suppress(ValueError):
                candidates.append((float(bin_dir.parent.name), bin_dir))
    if candidates:
        return max(candidates)[1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


class PostgresServer:
    """One running test server: its directory, its port, and helpers to use it.

    Thread-safe; every helper opens its own short-lived admin connection, so it also works
    after :meth:`restart`.
    """

    def __init__(self, directory: Path, bin_dir: Path, port: int, run_as: str | None) -> None:
        self.directory = directory
        """Holds ``data/`` (the cluster), ``log`` (the server's log) and the Unix socket."""
        self.bin_dir = bin_dir
        self.port = port
        self.run_as = run_as
        """The system user the binaries run as (``postgres`` when the tests run as root)."""
        self._names = itertools.count(1)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<PostgresServer 127.0.0.1:{self.port} in {self.directory}>"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_file(self) -> Path:
        return self.directory / "log"

    def url(self, dbname: str = "postgres") -> str:
        """``postgresql://postgres@127.0.0.1:<port>/<dbname>`` (no password: trust auth)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def schema_url(self, schema: str, dbname: str = SCHEMA_DATABASE) -> str:
        """The URL of ``dbname`` with ``search_path`` and ``application_name`` set to ``schema``."""
        return f"{self.url(dbname)}?options=-csearch_path%3D{schema}&application_name={schema}"

    def create_schema(self, name: str | None = None) -> str:
        """Create an empty schema (a fresh name unless given) in the ``toolcards`` database; returns its URL."""
        name = name or self._fresh_name()
        self.admin(f'CREATE SCHEMA "{name}"', dbname=SCHEMA_DATABASE)
        return self.schema_url(name)

    def drop_schema(self, name: str) -> None:
        """Drop a schema and its tables, first ending every session its URL opened (a killed child's)."""
        self.admin(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{name}'",
            dbname=SCHEMA_DATABASE,
        )
        self.admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE', dbname=SCHEMA_DATABASE)

    def create_database(self, name: str | None = None) -> str:
        """Create an empty UTF-8 database (a fresh name unless given); returns its URL."""
        name = name or self._fresh_name()
        self.admin(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, ending any session still connected to it (a killed child's)."""
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def admin(self, statement: str, dbname: str = "postgres") -> None:
        """Run one statement as the superuser on ``dbname``, outside a transaction."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement.encode())

    def start(self) -> None:
        """Start the server on :attr:`port` and wait until it accepts connections."""
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"
        try:
            self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log_file), "-o", options)
        except PostgresUnavailable as exc:
            raise PostgresUnavailable(f"{exc} Server log: {self.log_tail()}") from None

    def stop(self) -> None:
        """Stop the server (``-m fast``: sessions are ended, committed data is kept)."""
        self._pg_ctl("stop", "-w", "-m", "fast")

    def restart(self) -> None:
        """Stop and start the server on the same port: every open connection is ended."""
        self.stop()
        self.start()

    def destroy(self) -> None:
        """Stop the server if it runs and remove its directory."""
        with contextlib.suppress(PostgresUnavailable, OSError):
            if (
                _run(self._command(self.bin_dir / "pg_ctl", "status", "-D", str(self.data_dir)), check=False).returncode
                == 0
            ):
                self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, chars: int = 400) -> str:
        """The end of the server's log, on one line."""
        try:
            return " ".join(self.log_file.read_text(errors="replace").split())[-chars:]
        except OSError as exc:
            return f"(unreadable: {exc})"

    def _fresh_name(self) -> str:
        with self._lock:
            return f"test_{os.getpid()}_{next(self._names)}"

    def _pg_ctl(self, *args: str) -> None:
        _run(self._command(self.bin_dir / "pg_ctl", *args, "-D", str(self.data_dir)))

    def _command(self, program: Path, *args: str) -> list[str]:
        command = [str(program), *args]
        if self.run_as is None:
            return command
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", self.run_as, "--", *command]
        return ["su", self.run_as, "-s", "/bin/sh", "-c", shlex.join(command)]


def start_server(parent: Path | None = None) -> PostgresServer:
    """Create a cluster in a new temporary directory under ``parent`` and start it.

    Raises:
        PostgresUnavailable: no PostgreSQL binaries, no ``postgres`` user to run them as
            root, no psycopg, or the server failed to start (the message quotes its log).
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostgresUnavailable(
            "psycopg is not installed: pip install 'toolcards[postgres]' to run the PostgreSQL tests"
        ) from None
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(f"no PostgreSQL server binaries (initdb, pg_ctl) found; {INSTALL_HINT}")
    run_as = None
    owner: tuple[int, int] | None = None
    if os.geteuid() == 0:
        import pwd

        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                f"running as root and there is no `postgres` system user to run initdb as; {INSTALL_HINT}"
            ) from None
        run_as, owner = user.pw_name, (user.pw_uid, user.pw_gid)
    directory = Path(tempfile.mkdtemp(prefix="toolcards-pg-", dir=parent))
    if owner is not None:
        os.chown(directory, *owner)
    server = PostgresServer(directory, bin_dir, 0, run_as)
    try:
        initdb = server._command(
            bin_dir / "initdb",
            *("-D", str(server.data_dir), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"),
        )
        _run(initdb)
        # A port found free may be taken before the server binds it: try a few.
        for attempt in range(3):
            server.port = _free_port()
            try:
                server.start()
                break
            except PostgresUnavailable:
                if attempt == 2:
                    raise
        server.create_database(SCHEMA_DATABASE)
    except BaseException:
        server.destroy()
        raise
    return server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(command: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    # The caller's PG* variables (PGDATA, PGPORT...) must not redirect the test cluster.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env["LC_ALL"] = "C"
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, check=False, timeout=120, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresUnavailable(f"{Path(command[0]).name} failed to run ({exc}); {INSTALL_HINT}") from exc
    if check and done.returncode != 0:
        output = " ".join((done.stderr or done.stdout).split())[-400:]
        raise PostgresUnavailable(f"`{shlex.join(command)}` exited with {done.returncode}: {output}")
    return done
