"""``boloop serve`` as a child process (the real command: uvicorn, its lifespan, its signals) on a
free loopback port, for the tests that read what a client or an operator sees of it: the JSON
API over real HTTP, and the server's log on its stderr, read line by line while it runs.

``Served(url, *options)`` starts it and waits until it answers ``/openapi.json`` (which needs no
database, so a server whose database is down is "up" too); ``lines()`` is its stderr so far;
``wait_for_line(text)`` waits for a line holding ``text``; ``stop()`` sends SIGTERM (what a
service manager sends) and returns the exit status."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

__all__ = ["Served", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """One ``python -m boloop.cli serve --storage URL --port P OPTIONS...``."""

    def __init__(self, storage: str, *options: str, start_timeout: float = 60.0) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "boloop.cli", "serve", "--storage", storage,
             "--port", str(self.port), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )  # fmt: skip
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                with urllib.request.urlopen(self.base + "/openapi.json", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                self._reader.join(timeout=5)
                raise AssertionError("boloop serve did not start:\n" + "".join(self.lines()))
            time.sleep(0.1)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    def lines(self) -> list[str]:
        """The lines the server wrote to stderr so far."""
        with self._lock:
            return list(self._lines)

    def wait_for_line(self, text: str, timeout: float) -> list[str]:
        """Wait until a line of stderr holds ``text``; the lines so far (the test asserts)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = self.lines()
            if any(text in line for line in lines):
                return lines
            time.sleep(0.05)
        return self.lines()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then the exit status (None: it did not exit within ``timeout``, and was
        killed)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self._reader.join(timeout=5)
        return code
