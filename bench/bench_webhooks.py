"""Benchmark: the webhook dispatcher delivering to a local receiver.

Run: ``python -m bench webhooks [-- --events 5000 --stores sqlite,postgres --concurrency 32
--batch-size 200 --receiver-latency 0]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database
this benchmark owns and wipes), a tenant is bootstrapped, one endpoint (every event type) points
at the receiver, and ``--events`` customers are created (``customer.created`` each; not measured).
The receiver is uvicorn in a subprocess serving a minimal ASGI app on 127.0.0.1 that answers every
POST with 204 and counts them (HTTP/1.1 keep-alive), after ``--receiver-latency`` milliseconds
(default 0: an instant answer; a real receiver takes tens of milliseconds). Then one
``billing.deliver_webhooks()`` pass is timed, with ``HttpWebhookTransport(concurrency=...)``:
the fan-out of the notifications to deliveries, the claims, signing, sending and recording, until
nothing is due. The figure is deliveries per second of that pass (target, issue 17: >= 500/s);
the receiver's count must equal the number of events (each once).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.stores import reset_postgres

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/billingkit_bench_webhooks"

RECEIVER = """
import asyncio, sys, uvicorn
count = 0
latency = float(sys.argv[2]) / 1000
async def app(scope, receive, send):
    global count
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if scope["method"] == "POST":
        if latency:
            await asyncio.sleep(latency)
        count += 1
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    else:
        body = str(count).encode()
        length = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": length})
        await send({"type": "http.response.body", "body": body})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as answer:
        return int(answer.read())


def _start_receiver(latency_ms: float) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port), str(latency_ms)])
    ends = time.monotonic() + 20
    while True:
        try:
            _count(port)
            return process, port
        except OSError:
            if time.monotonic() > ends:
                process.kill()
                raise SystemExit("the receiver did not start") from None
            time.sleep(0.1)


def run_store(kind: str, url: str, args: argparse.Namespace) -> float:
    from billingkit import Billing, Settings
    from billingkit.providers.http_webhooks import HttpWebhookTransport

    receiver, port = _start_receiver(args.receiver_latency)
    transport = HttpWebhookTransport(concurrency=args.concurrency)
    try:
        settings = Settings(webhook_batch_size=args.batch_size, webhook_concurrency=args.concurrency)
        billing = Billing.from_url(url, settings=settings, webhook_transport=transport, migrate=True)
        setup = billing.bootstrap()
        scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        scoped.webhooks.create(url=f"http://127.0.0.1:{port}/hooks")
        for n in range(args.events):
            scoped.customers.create(external_id=f"c-{n}", name=f"Customer {n}")
        started, cpu = time.perf_counter(), time.process_time()
        report = billing.deliver_webhooks()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        received = _count(port)
        billing.close()
    finally:
        transport.close()
        receiver.kill()
        receiver.wait()
    if report.delivered != args.events or received != args.events:
        raise SystemExit(f"{kind}: delivered {report.delivered}, received {received}, expected {args.events}")
    rate = args.events / seconds
    print(
        f"{kind:<9} {args.events} webhooks in {seconds:.2f} s: {rate:,.0f} webhooks/s "
        f"(concurrency {args.concurrency}, batches of {args.batch_size}, receiver latency "
        f"{args.receiver_latency:g} ms); the dispatcher's own CPU "
        f"{cpu:.2f} s, {args.events / cpu:,.0f} webhooks per CPU second; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    return rate


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench webhooks")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument(
        "--receiver-latency", type=float, default=0.0, help="milliseconds the receiver takes to answer"
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="a database this benchmark may wipe")
    args = parser.parse_args(argv)
    for kind in args.stores.split(","):
        if kind == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                run_store(kind, f"sqlite:///{Path(folder) / 'webhooks.db'}", args)
        elif kind == "postgres":
            reset_postgres(args.pg_url)
            run_store(kind, args.pg_url, args)
        else:
            raise SystemExit(f"unknown store {kind!r}: sqlite or postgres")
