"""`billingkit serve` really serves: start it on a free port, call it, stop it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(
    url: str, key: str | None, body: dict[str, object] | None = None
) -> tuple[int, dict[str, object]]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("content-type", "application/json")
    if key:
        req.add_header("x-api-key", key)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_bootstrap_and_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    boot = subprocess.run(
        [sys.executable, "-m", "billingkit.cli", "bootstrap", "--database-url", url, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    key = json.loads(boot.stdout)["environments"][0]["api_key"]
    port = _free_port()
    env = {**os.environ, "BILLINGKIT_TOKEN_SECRET": "serve-test"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "billingkit.cli",
            "serve",
            "--database-url",
            url,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _ = _request(f"{base}/customers", key)
                break
            except (ConnectionError, urllib.error.URLError):
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert status == 200
        status, body = _request(f"{base}/customers", key, {"external_id": "srv", "name": "Served"})
        assert status == 201 and body["external_id"] == "srv"
        status, body = _request(f"{base}/customers", None)
        assert status == 401 and body["code"] == "unauthorized"
    finally:
        server.terminate()
        server.wait(timeout=10)
