"""A real webhook receiver for tests: an HTTP server on 127.0.0.1 (a thread of the test process)
that keeps every request it gets and answers what the test tells it to; it can go down (the port
refuses connections) and come back on the same port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    """``url`` receives; ``received`` lists the requests (in arrival order); ``answers`` is a
    queue of status codes for the next requests (then ``default``)."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self.received: list[Received] = []
        self.answers: list[int] = []
        self.default = 200
        self.delay = 0.0  # seconds each answer takes
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                if len(body) < length:
                    # The sender died mid-request (a test kills a dispatcher with SIGKILL): like any
                    # real receiver, keep nothing of a truncated body, whose signature cannot match.
                    self.close_connection = True
                    return
                if receiver.delay:
                    time.sleep(receiver.delay)
                with receiver._lock:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status = receiver.answers.pop(0) if receiver.answers else receiver.default
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            allow_reuse_address = True
            request_queue_size = 128  # a burst of connections is queued, not refused

        self._server = Server(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go down: connections to the port are refused until :meth:`start`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> list[str]:
        with self._lock:
            return [r.webhook_id for r in self.received]


@contextmanager
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    try:
        yield running
    finally:
        running.stop()
