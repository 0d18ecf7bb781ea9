"""The HTTP side of ``python -m bench ingest``: ``billingkit serve`` in a subprocess, and a client
that POSTs pre-encoded bulk bodies over one keep-alive connection."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HttpIngest", "http_server"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(database_url: str) -> Iterator[int]:
    """``billingkit serve`` on ``database_url``, in a subprocess; yields its port."""
    port = _free_port()
    command = [sys.executable, "-m", "billingkit.cli", "serve", "--database-url", database_url]
    command += ["--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/v1/health-probe-that-is-a-404")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the HTTP server did not start") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class HttpIngest:
    """POSTs pre-encoded bodies to ``/v1/events/bulk`` on one keep-alive connection."""

    def __init__(self, port: int, api_key: str) -> None:
        self.port = port
        self.headers = {"content-type": "application/json", "x-api-key": api_key}
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("GET", "/v1/health-probe-that-is-a-404")
        conn.getresponse().read()
        return conn

    def reconnect(self) -> None:
        """A fresh keep-alive connection (the server closes idle ones after 5 s, and a round's
        (a) and (b) take longer), opened outside the timed part."""
        self.conn.close()
        self.conn = self._connect()

    def __call__(self, body: bytes) -> int:
        self.conn.request("POST", "/v1/events/bulk", body=body, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 202:
            raise SystemExit(f"HTTP {response.status}: {data[:500]!r}")
        return int(json.loads(data)["accepted"])

    def close(self) -> None:
        self.conn.close()
