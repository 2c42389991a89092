"""A TCP relay to a database that can go silent (:class:`SilentRelay`): what a frozen server,
a paused virtual machine or a network that drops everything looks like to a client. Used by
the tests of the server's storage check and of its answer limit."""

from __future__ import annotations

import socket
import threading
import time

__all__ = ["SilentRelay"]


class SilentRelay:
    """A TCP relay to the database that can go silent: it keeps the connections open and
    forwards nothing while ``silent`` is set (what a paused virtual machine or a frozen server
    looks like to the client: its socket is acknowledged, no answer comes), then forwards what
    it held once cleared. ``silence_at``: bytes that, when the client sends them (``b"COMMIT\\x00"``),
    make it go silent before they are forwarded (a server that froze as the commit came)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.silent = threading.Event()
        self.silence_at: bytes | None = None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:  # each connection: a pipe each way
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, server]
            for a, b, up in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, up), daemon=True).start()

    def _pipe(self, a, b, up: bool) -> None:
        while True:
            try:
                data = a.recv(65536)
            except OSError:
                return
            if not data:  # the other end closed: said once the silence ends, as a frozen
                while self.silent.is_set():  # server reads it when it goes on
                    time.sleep(0.05)
                try:
                    b.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            if up and self.silence_at is not None and self.silence_at in data:
                self.silence_at = None
                self.silent.set()
            while self.silent.is_set():
                time.sleep(0.05)
            try:
                b.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:
            s.close()
