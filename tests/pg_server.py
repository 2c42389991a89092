"""A throwaway PostgreSQL server for the storage tests and ``benchmarks/storage_speed.py``.

:class:`PostgresServer` runs Debian's ``initdb`` and ``pg_ctl`` (found on the PATH, in
``$BOLOOP_PG_BIN``, through ``pg_config --bindir`` or under ``/usr/lib/postgresql/*/bin``) in a
fresh temporary directory, listening on a free loopback port (and a Unix socket in that
directory). PostgreSQL refuses to run as root, so under root the server runs as the unprivileged
``postgres`` user (or ``nobody``), which owns the directory. Trust authentication on loopback
only; ``fsync=off`` (a server crash is simulated by an immediate stop, which keeps what the
server acknowledged: WAL is still written before a commit returns, only not forced to disk).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["PostgresServer", "benchmark_database", "find_pg_bin"]


def find_pg_bin() -> str | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    candidates = []
    if os.environ.get("BOLOOP_PG_BIN"):
        candidates.append(os.environ["BOLOOP_PG_BIN"])
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(os.path.dirname(os.path.realpath(initdb)))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            candidates.append(out)
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in candidates:
        if d and all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            return d
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unprivileged() -> pwd.struct_passwd | None:
    """The user to run the server as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


class PostgresServer:
    """One server in a temporary directory; :meth:`start`, :meth:`stop`, :meth:`new_database`."""

    def __init__(self, bin_dir: str, tag: str = "", durable: bool = False) -> None:
        self.bin_dir = bin_dir
        #: fsync as a production server does (benchmarks); off for tests (see the docstring)
        self.durable = durable
        self.user = _unprivileged()
        self.dir = tempfile.mkdtemp(prefix=f"boloop-pg{tag}-")
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = _free_port()
        self._n = 0
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--no-sync",
                  "-E", "UTF8", "--locale=C")  # fmt: skip

    def _preexec(self) -> Callable[[], None] | None:
        user = self.user
        if user is None:
            return None

        def drop() -> None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

        return drop

    def _run(self, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, "LC_ALL": "C"}
        env.pop("PGDATA", None)
        res = subprocess.run(
            [os.path.join(self.bin_dir, binary), *args],
            cwd=self.dir,
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=self._preexec(),  # drop root: postgres refuses it
            timeout=120,
        )
        if check and res.returncode != 0:
            log = ""
            if os.path.exists(self.log):
                with open(self.log, encoding="utf-8", errors="replace") as fh:
                    log = fh.read()[-2000:]
            raise RuntimeError(f"{binary} {' '.join(args)} failed: {res.stderr}{res.stdout}{log}")
        return res

    def start(self) -> None:
        # the port may have been taken since it was chosen: try a few
        for attempt in range(3):
            opts = (
                f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                "-c max_connections=60 -c shared_buffers=16MB"
            )
            if not self.durable:
                opts += " -c fsync=off -c full_page_writes=off"
            res = self._run("pg_ctl", "-D", self.data, "-o", opts, "-l", self.log, "-w",
                            "-t", "60", "start", check=False)  # fmt: skip
            if res.returncode == 0:
                return
            if attempt == 2:
                raise RuntimeError(f"pg_ctl start failed: {res.stderr}{res.stdout}")
            self.port = _free_port()

    def stop(self, mode: str = "fast") -> None:
        """``fast`` (clients disconnected, a clean shutdown) or ``immediate`` (like a crash)."""
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop", check=False)

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        auth = "postgres" if password is None else f"postgres:{password}"
        return f"postgresql+psycopg://{auth}@127.0.0.1:{self.port}/{database}"

    def spellings(self, database: str) -> list[str]:
        """Three URLs of one database as different people write them: by ``127.0.0.1``, by
        ``localhost`` and by the server's Unix socket (its directory and port as query
        parameters, libpq's keywords)."""
        return [
            self.url(database),
            f"postgresql+psycopg://postgres@localhost:{self.port}/{database}",
            f"postgresql+psycopg://postgres@/{database}?host={self.dir}&port={self.port}",
        ]

    def admin(self, sql: str) -> Any:
        """Run one statement as the superuser on the ``postgres`` database (autocommit)."""
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else None

    def new_database(self, prefix: str = "t") -> str:
        """A fresh empty database; its URL."""
        self._n += 1
        name = f"{prefix}{os.getpid()}_{self._n}"
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def password_role(self, role: str, password: str, database: str | None = None) -> str:
        """A login role that must give ``password`` (SCRAM) over loopback, although the server
        trusts everybody else there: a ``pg_hba.conf`` rule for this role alone, put ahead of the
        trust rules. With ``database``, a fresh database of that name owned by the role. The
        role's URL (with the password) on ``database`` or ``postgres``."""
        hba = os.path.join(self.data, "pg_hba.conf")
        with open(hba, encoding="utf-8") as fh:
            rules = fh.read()
        rule = f"host all {role} 127.0.0.1/32 scram-sha-256\n"
        if rule not in rules:
            with open(hba, "w", encoding="utf-8") as fh:  # keeps the file's owner and mode
                fh.write(rule + rules)
        self.admin(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        self.admin("SELECT pg_reload_conf()")
        self._wait_password_needed(role)
        if database is not None:
            self.admin(f'CREATE DATABASE "{database}" OWNER "{role}"')
        db = database or "postgres"
        return f"postgresql+psycopg://{role}:{password}@127.0.0.1:{self.port}/{db}"

    def _wait_password_needed(self, role: str, timeout: float = 30.0) -> None:
        """The server reloads its rules after ``pg_reload_conf()`` returns: wait until it asks
        ``role`` for its password (a login without one is refused)."""
        import psycopg

        t_end = time.time() + timeout
        while True:
            try:
                conn = psycopg.connect(
                    host="127.0.0.1", port=self.port, user=role, dbname="postgres",
                    password="", connect_timeout=5,
                )  # fmt: skip
            except psycopg.OperationalError:
                return
            conn.close()
            if time.time() > t_end:
                raise RuntimeError(f"the server still lets {role!r} in without a password")
            time.sleep(0.05)

    def close(self) -> None:
        self.stop("fast")
        shutil.rmtree(self.dir, ignore_errors=True)

    def wait_down(self, timeout: float = 30.0) -> None:
        t_end = time.time() + timeout
        while time.time() < t_end:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.05)


@contextlib.contextmanager
def benchmark_database(
    url: str | None, prefix: str, durable: bool = False
) -> Iterator[tuple[str, PostgresServer | None]]:
    """The PostgreSQL database a benchmark measures, and the server it started (None when given
    one): ``url`` as given (its ``--pg``), else an empty database of a throwaway server started
    here (``durable``: fsync on) and closed when the block ends."""
    if url is not None:
        yield url, None
        return
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL server binary found; pass --pg URL")
    server = PostgresServer(bin_dir, tag="-bench", durable=durable)
    server.start()
    try:
        yield server.new_database(prefix), server
    finally:
        server.close()
