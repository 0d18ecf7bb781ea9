"""The shape of the package: import directions, the promised surface, tenant scoping."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import billingkit
from billingkit.ports import Repositories
from billingkit.storage.kinds import KINDS, Level
from billingkit.storage.sql.tables import TABLES, events, metadata

SRC = Path(billingkit.__file__).parent
THIRD_PARTY_OK_IN_DOMAIN = {"pydantic", "pydantic_core", "dateutil", "babel", "typing_extensions"}


# The imports the domain makes outside itself, each inside the method that needs it, never at
# module level: ``Invoice.to_pdf`` calls the renderer of the optional ``pdf`` extra (decision 161);
# display hooks (``repr``, ``str``, ``_repr_html_``, ``Invoice.display``) call the renderers of
# ``billingkit.display`` and ``Page.to_pandas`` its frames (the optional ``notebook`` extra).
LAZY_FROM_DOMAIN = {
    ("invoices.py", "billingkit.documents"),
    ("invoices.py", "billingkit.display"),
    ("display.py", "billingkit.display"),
    ("queries.py", "billingkit.display.frames"),
}


def _imports(path: Path, *, module_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body if module_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


def test_domain_imports_only_itself_errors_and_allowed_libraries() -> None:
    stdlib = set(sys.stdlib_module_names)
    offenders = []
    for path in _modules("domain"):
        for name in _imports(path):
            top = name.split(".")[0]
            if name.startswith("billingkit."):
                lazy = (path.name, name) in LAZY_FROM_DOMAIN
                if not (name.startswith("billingkit.domain") or name == "billingkit.errors" or lazy):
                    offenders.append((path.name, name))
            elif top not in stdlib and top not in THIRD_PARTY_OK_IN_DOMAIN:
                offenders.append((path.name, name))
    assert offenders == []
    for filename, name in LAZY_FROM_DOMAIN:  # still imported only when called
        assert name not in _imports(SRC / "domain" / filename, module_level_only=True)


def test_domain_never_reads_the_clock() -> None:
    for path in _modules("domain"):
        text = path.read_text()
        for forbidden in ("datetime.now(", "datetime.utcnow(", "time.time(", "date.today("):
            assert forbidden not in text, f"{path.name} reads the clock ({forbidden})"


def test_layer_directions() -> None:
    only_records = (
        "billingkit.services",
        "billingkit.storage",
        "billingkit.http",
        "billingkit.facade",
        "sqlalchemy",
        "fastapi",
    )
    rules = {
        "services": ("billingkit.storage", "billingkit.http", "billingkit.facade", "sqlalchemy", "fastapi"),
        "storage": ("billingkit.services", "billingkit.http", "billingkit.facade", "fastapi"),
        "http": ("billingkit.storage", "sqlalchemy"),
        # Displays and frames are drawn from domain records too (documents give the invoice text).
        "display": only_records,
        # Documents are drawn from domain records; whoever needs one reads the records first.
        "documents": only_records,
        # In-process adapters of the outside-party ports: like storage, they see ports and domain.
        "providers": only_records,
    }
    offenders = []
    for package, forbidden in rules.items():
        for path in _modules(package):
            for name in _imports(path):
                if name.startswith(forbidden):
                    offenders.append((package, path.name, name))
    assert offenders == []


def test_only_the_http_adapter_imports_prometheus() -> None:
    """The library reports to metrics through BillingObserver; prometheus is the adapter's choice."""
    offenders = [
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if "http" not in path.relative_to(SRC).parts
        and any(name.split(".")[0] == "prometheus_client" for name in _imports(path))
    ]
    assert offenders == []


def test_only_the_documents_package_imports_the_pdf_library() -> None:
    """fpdf2 is the optional ``pdf`` extra: one package draws PDFs, and imports it on first use."""
    offenders = [
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if "documents" not in path.relative_to(SRC).parts
        and any(name.split(".")[0] == "fpdf" for name in _imports(path))
    ]
    assert offenders == []


def test_public_surface_is_pinned_and_sorted() -> None:
    assert billingkit.__all__ == sorted(billingkit.__all__)
    assert billingkit.__all__ == [
        "Account",
        "AccountType",
        "Actor",
        "Addon",
        "AddonDetail",
        "AggregationType",
        "AlertCondition",
        "AlreadyExists",
        "ApiKey",
        "Backtest",
        "Billing",
        "BillingCadence",
        "BillingCycle",
        "BillingError",
        "BillingModel",
        "BillingPeriod",
        "BillingReason",
        "BucketSize",
        "CollectionMethod",
        "Coupon",
        "CouponCadence",
        "CouponType",
        "CreditGrant",
        "CreditGrantCadence",
        "CreditGrantExpiryType",
        "CreditGrantExpiryUnit",
        "CreditGrantPeriod",
        "CreditGrantScope",
        "CreditNote",
        "CreditNoteLineItem",
        "CreditNoteReason",
        "CreditNoteStatus",
        "CreditNoteType",
        "Customer",
        "Entitlement",
        "EntitlementAggregationMode",
        "EntitlementCheck",
        "EntitlementEntityType",
        "EntitlementGrantAllocation",
        "EntitlementGrantDurationUnit",
        "EntitlementGrantMeasure",
        "Environment",
        "EnvironmentType",
        "Feature",
        "FeatureType",
        "Filter",
        "Group",
        "GroupEntityType",
        "IdempotencyConflict",
        "InternalError",
        "InvalidOperation",
        "Invoice",
        "InvoiceCadence",
        "InvoiceCouponApplication",
        "InvoiceLineItem",
        "InvoiceStatus",
        "InvoiceTax",
        "InvoiceType",
        "ListQuery",
        "LoginThrottle",
        "MemoryStorage",
        "MemoryWebhookTransport",
        "Meter",
        "NotFound",
        "NotificationEvent",
        "Op",
        "Page",
        "PauseStatus",
        "PaymentBehavior",
        "PaymentStatus",
        "PaymentTerms",
        "PermissionDenied",
        "Plan",
        "PlanDetail",
        "Price",
        "PriceEntityType",
        "PriceType",
        "PriceUnit",
        "PriceUnitType",
        "ProrationBehavior",
        "QuantityRounding",
        "RazorpayPaymentProvider",
        "RefundTarget",
        "ResetUsage",
        "Role",
        "RunReport",
        "SandboxPaymentProvider",
        "Scoped",
        "Settings",
        "SimulationResult",
        "Sort",
        "SqlStorage",
        "Status",
        "Subscription",
        "SubscriptionLineItem",
        "SubscriptionStatus",
        "SubscriptionType",
        "SystemClock",
        "TaxAssociation",
        "TaxRate",
        "TaxRateEntityType",
        "TaxRateScope",
        "TaxRateStatus",
        "TaxRateType",
        "Tenant",
        "TestClock",
        "TierMode",
        "TooManyRequests",
        "TransactionReason",
        "TransactionStatus",
        "TransactionType",
        "Unauthorized",
        "UsageResetPeriod",
        "ValidationError",
        "VersionConflict",
        "Wallet",
        "WalletPriceType",
        "WalletStatus",
        "WalletTransaction",
        "WalletType",
        "Worker",
        "simulate",
    ]
    for name in billingkit.__all__:
        assert getattr(billingkit, name) is not None


def test_every_enum_class_name_is_defined_once() -> None:
    # Two enums with one name (there were two InvoiceCadence) make users import the wrong one.
    defined: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id in ("Enum", "StrEnum") for base in node.bases
            ):
                defined.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    assert {name: paths for name, paths in defined.items() if len(paths) > 1} == {}


def test_public_enums_are_the_ones_the_models_use() -> None:
    from billingkit.domain import invoice_lines, proration
    from billingkit.domain.catalog import prices

    assert prices.InvoiceCadence is proration.InvoiceCadence is billingkit.InvoiceCadence
    assert billingkit.Price.model_fields["invoice_cadence"].annotation is billingkit.InvoiceCadence
    assert tuple(billingkit.InvoiceCadence) == (invoice_lines.ADVANCE, invoice_lines.ARREAR)
    assert (
        billingkit.Subscription.model_fields["subscription_status"].annotation
        is billingkit.SubscriptionStatus
    )
    assert billingkit.Invoice.model_fields["invoice_status"].annotation is billingkit.InvoiceStatus
    assert billingkit.Environment.model_fields["type"].annotation is billingkit.EnvironmentType


def test_import_is_cheap_and_inert() -> None:
    code = (
        "import sys, billingkit; "
        "heavy = [m for m in ('fastapi', 'alembic', 'psycopg', 'hypothesis', 'uvicorn') "
        "if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_tenant_owned_table_is_scoped() -> None:
    assert set(TABLES) == set(KINDS), "every kind has a table and vice versa"
    # Every kind has a repository; usage events have their own scoped port (EventStore).
    assert set(Repositories.__annotations__) == set(KINDS) | {"events", "usage", "counters"}
    for name, kind in KINDS.items():
        columns = set(TABLES[name].c.keys())
        if kind.level is not Level.GLOBAL:
            assert "tenant_id" in columns, name
        if kind.level is Level.ENVIRONMENT:
            assert "environment_id" in columns, name
        common = {"id", "status", "created_at", "updated_at", "created_by", "updated_by"}
        assert common <= columns, name
    known = {t.name for t in TABLES.values()}
    assert {t.name for t in metadata.sorted_tables} == known | {"events", "counters"}
    # The events table is keyed by scope: its primary key starts with tenant and environment.
    assert [c.name for c in events.primary_key.columns] == ["tenant_id", "environment_id", "id"]


def test_the_stores_do_not_import_each_other() -> None:
    """What both adapters share lives in neutral modules (``storage.records``, ``storage.kinds``)."""
    offenders = [
        (path.relative_to(SRC).as_posix(), name)
        for adapter, other in (
            ("storage/sql", "billingkit.storage.memory"),
            ("storage/memory", "billingkit.storage.sql"),
        )
        for path in _modules(adapter)
        for name in _imports(path)
        if name.startswith(other)
    ]
    assert offenders == []
