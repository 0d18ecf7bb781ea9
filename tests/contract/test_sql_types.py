"""The SQL column types keep billingkit's money and time rules on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, insert, select

from billingkit.errors import ValidationError
from billingkit.storage.sql import SqlStorage
from billingkit.storage.sql.types import ExactDecimal, UtcDateTime


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        storage = SqlStorage.from_url(f"sqlite:///{tmp_path / 't.db'}")
    else:
        storage = SqlStorage.from_url(request.getfixturevalue("postgres_url"), migrate=False)
    meta = MetaData()
    table = Table(
        "type_probe",
        meta,
        Column("id", Integer, primary_key=True),
        Column("amount", ExactDecimal()),
        Column("at", UtcDateTime()),
    )
    meta.drop_all(storage.engine)
    meta.create_all(storage.engine)
    yield storage.engine, table
    meta.drop_all(storage.engine)
    storage.close()


def test_decimals_round_trip_exactly(engine) -> None:  # type: ignore[no-untyped-def]
    eng, table = engine
    values = [
        Decimal("0.1") + Decimal("0.2"),
        Decimal("12345678901234567890.123456789"),
        Decimal("-0.000001"),
    ]
    with eng.begin() as conn:
        for i, v in enumerate(values):
            conn.execute(insert(table).values(id=i, amount=v))
    with eng.connect() as conn:
        got = [r.amount for r in conn.execute(select(table).order_by(table.c.id))]
    assert got == values
    assert all(isinstance(v, Decimal) for v in got)
    assert got[0] == Decimal("0.3")


def test_instants_come_back_aware_utc_and_naive_is_refused(engine) -> None:  # type: ignore[no-untyped-def]
    eng, table = engine
    local = datetime(2026, 3, 29, 2, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    with eng.begin() as conn:
        conn.execute(insert(table).values(id=1, at=local))
    with eng.connect() as conn:
        got = conn.execute(select(table.c.at)).scalar_one()
    assert got == local and got.tzinfo is not None and got.utcoffset() == timedelta(0)
    assert got == datetime(2026, 3, 28, 21, 0, tzinfo=UTC)
    with pytest.raises(Exception) as info, eng.begin() as conn:
        conn.execute(insert(table).values(id=2, at=datetime(2026, 1, 1)))
    assert (
        isinstance(info.value, ValidationError)
        or isinstance(info.value.__cause__, ValidationError)
        or ("naive" in str(info.value))
    )
    with pytest.raises(Exception, match="finite"), eng.begin() as conn:
        conn.execute(insert(table).values(id=3, amount=Decimal("NaN")))


def test_instants_sort_in_time_order_across_years(engine) -> None:  # type: ignore[no-untyped-def]
    # SQLite stores text: a year before 1000 must still be four digits, or it sorts after 2026.
    eng, table = engine
    instants = [
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(900, 6, 1, 12, 0, 0, 7, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    ]
    with eng.begin() as conn:
        for i, at in enumerate(instants):
            conn.execute(insert(table).values(id=i, at=at))
    with eng.connect() as conn:
        got = [r.at for r in conn.execute(select(table.c.at).order_by(table.c.at))]
    assert got == sorted(instants)


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_row_encoder_writes_what_the_column_types_write(store: str, tmp_path, request) -> None:  # type: ignore[no-untyped-def]
    """Repositories write rows through ``RowEncoder``; reads and filters go through the column
    types. Both must agree on every stored form, and both refuse naive instants and non-finite
    decimals (``model_copy`` skips validation, so a model can carry them)."""
    from billingkit.storage.sql.mapping import row_encoder
    from billingkit.storage.sql.tables import TABLES
    from billingkit.testing.contracts.storage import sample

    url = f"sqlite:///{tmp_path / 'e.db'}" if store == "sqlite" else request.getfixturevalue("postgres_url")
    storage = SqlStorage.from_url(url, migrate=True)
    table = TABLES["invoices"]
    invoice = sample("invoices", subtotal=Decimal("12.50"), due_date=datetime(900, 1, 2, tzinfo=UTC))
    dialect = storage.engine.dialect
    encoder = row_encoder(type(invoice), table, dialect)
    try:
        for column, value in zip(table.columns, encoder.values(invoice), strict=True):
            if column.name in (
                "coupon_applications",
                "taxes",
                "line_items",
                "metadata",
                "adjustment_sources",
            ):
                continue  # JSON: compared through the round trip below
            expected = column.type.dialect_impl(dialect).bind_processor(dialect)
            raw = getattr(invoice, column.name)
            raw = raw.value if hasattr(raw, "value") and not isinstance(raw, Decimal) else raw
            assert value == (expected(raw) if expected else raw), column.name
        with storage.unit_of_work(invoice.tenant_id, invoice.environment_id) as uow:
            uow.invoices.add(invoice)
            assert uow.invoices.get(invoice.id) == invoice
            for bad in (
                invoice.model_copy(update={"id": "inv_naive", "due_date": datetime(2026, 1, 1)}),
                invoice.model_copy(update={"id": "inv_nan", "subtotal": Decimal("NaN")}),
            ):
                with pytest.raises(ValidationError):
                    uow.invoices.add(bad)
                assert uow.invoices.find(bad.id) is None
    finally:
        storage.close()
