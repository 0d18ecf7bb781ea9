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

import pytest


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


def _wait_for(url: str) -> tuple[int, bytes]:
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read()
        except (ConnectionError, urllib.error.URLError):
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)


def test_serve_takes_settings_from_the_environment_and_serves_operator_endpoints(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    port, ignored_port = _free_port(), _free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in ("BILLINGKIT_TOKEN_SECRET", "BILLINGKIT_LOG_LEVEL")
    }
    env.update(
        BILLINGKIT_DATABASE_URL=url,
        BILLINGKIT_HOST="127.0.0.1",
        BILLINGKIT_PORT=str(ignored_port),  # the --port flag below wins
        BILLINGKIT_WORKER_ENABLED="false",
        BILLINGKIT_WORKER_INTERVAL="0.05",
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "billingkit.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert _wait_for(f"{base}/health") == (200, b'{"status":"ok"}')
        assert _wait_for(f"{base}/ready") == (200, b'{"status":"ok"}')
        status, body = _wait_for(f"{base}/metrics")
        assert status == 200
        assert 'billingkit_http_requests_total{method="GET",route="/ready",status="200"} 1.0' in body.decode()
        # No worker ran (BILLINGKIT_WORKER_ENABLED=false, though the interval is 50 ms).
        time.sleep(0.3)
        _, body = _wait_for(f"{base}/metrics")
        assert 'billingkit_billing_runs_total{status="completed"} 0.0' in body.decode()
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"http://127.0.0.1:{ignored_port}/health", timeout=2)
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=10)
    warnings = [line for line in stderr.splitlines() if "BILLINGKIT_TOKEN_SECRET is not set" in line]
    assert len(warnings) == 1 and " WARNING billingkit.cli " in warnings[0]
