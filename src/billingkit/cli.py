"""``billingkit serve | worker | migrate | bootstrap``.

The CLI is the only part besides :meth:`Billing.from_env` that reads the process environment:
``BILLINGKIT_DATABASE_URL`` and ``BILLINGKIT_TOKEN_SECRET`` (see docs/configuration.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence

from billingkit.errors import BillingError

DEFAULT_DATABASE_URL = "sqlite:///billingkit.db"


def _database_url(args: argparse.Namespace) -> str:
    return str(args.database_url or os.environ.get("BILLINGKIT_DATABASE_URL") or DEFAULT_DATABASE_URL)


def _billing(args: argparse.Namespace, *, migrate: bool | None = None):  # type: ignore[no-untyped-def]
    from billingkit.facade import Billing

    return Billing.from_url(
        _database_url(args), migrate=migrate, token_secret=os.environ.get("BILLINGKIT_TOKEN_SECRET")
    )


def cmd_migrate(args: argparse.Namespace) -> int:
    from billingkit.storage.sql import SqlStorage
    from billingkit.storage.sql.schema import current_revision, head_revision

    storage = SqlStorage.from_url(_database_url(args), migrate=True)
    print(f"schema at revision {current_revision(storage.engine)} (head {head_revision()})")
    storage.close()
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    billing = _billing(args)
    result = billing.bootstrap(
        tenant_name=args.tenant_name, owner_email=args.owner_email, owner_password=args.owner_password
    )
    data = result.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"tenant {data['tenant_id']}")
        for env in result.environments:
            print(f"  {env[0].type.value:<12} {env[0].id}  api key: {env[1].api_key}")
        print(f"  owner {result.owner.email} password: {result.owner_password}")
    billing.close()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ModuleNotFoundError:
        print("billingkit serve needs the 'http' extra: pip install 'billingkit[http]'", file=sys.stderr)
        return 2
    from billingkit.facade.worker import Worker
    from billingkit.http import create_app

    billing = _billing(args)
    worker = None if args.no_worker else Worker(billing, interval=args.interval).start()
    try:
        uvicorn.run(create_app(billing), host=args.host, port=args.port, log_level=args.log_level)
    finally:
        if worker is not None:
            worker.stop()
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    import logging
    import signal

    from billingkit.facade.worker import Worker

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    billing = _billing(args)
    worker = Worker(billing, interval=args.interval)
    if args.once:
        report = worker.tick()
        billing.close()
        if report is None:
            return 1
        print(
            f"{report.subscriptions} subscriptions, {report.invoice_count} invoices, "
            f"{report.notifications} notifications, {len(report.failures)} failures"
        )
        return 0
    # SIGTERM (docker stop, systemd) ends the loop after the current run, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: worker.stop(timeout=0))
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the loop like SIGTERM
        worker.run()
    billing.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="billingkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def with_db(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument(
            "--database-url",
            help=f"SQLAlchemy URL (default: $BILLINGKIT_DATABASE_URL or {DEFAULT_DATABASE_URL})",
        )
        return p

    serve = with_db(sub.add_parser("serve", help="run the REST adapter"))
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--interval", type=float, default=60.0, help="seconds between billing runs")
    serve.add_argument("--no-worker", action="store_true", help="do not run due billing in the background")
    serve.set_defaults(func=cmd_serve)

    worker = with_db(sub.add_parser("worker", help="run due billing in a loop"))
    worker.add_argument("--interval", type=float, default=60.0, help="seconds between billing runs")
    worker.add_argument("--once", action="store_true", help="one run, print what it did, exit")
    worker.add_argument("--log-level", default="info")
    worker.set_defaults(func=cmd_worker)

    migrate = with_db(sub.add_parser("migrate", help="apply database migrations"))
    migrate.set_defaults(func=cmd_migrate)

    boot = with_db(sub.add_parser("bootstrap", help="create a tenant with test and production keys"))
    boot.add_argument("--tenant-name", default="Default")
    boot.add_argument("--owner-email", default="owner@example.com")
    boot.add_argument("--owner-password", default=None)
    boot.add_argument("--json", action="store_true", help="print the result as JSON")
    boot.set_defaults(func=cmd_bootstrap)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BillingError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
