"""The tables of outbound webhooks (issue 17): endpoints and deliveries. Each is registered in
:data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, String, Table, Text

from billingkit.storage.sql.columns import (
    common_columns,
    instant_column,
    json_column,
    metadata,
    scoped_indexes,
)

__all__ = ["webhook_deliveries", "webhook_endpoints"]

webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    *common_columns(),
    Column("url", Text(), nullable=False),
    Column("description", Text()),
    Column("enabled", Boolean(), nullable=False),
    json_column("event_types", nullable=False),
    json_column("headers", nullable=False),
    Column("secret_ciphertext", Text(), nullable=False),
    Column("failure_streak", Integer(), nullable=False),
    Column("disabled_reason", Text()),
    *scoped_indexes("webhook_endpoints"),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    *common_columns(),
    Column("endpoint_id", String(64), nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("event_type", String(128), nullable=False),
    Column("entity_type", String(64), nullable=False),
    Column("entity_id", String(255), nullable=False),
    Column("delivery_status", String(16), nullable=False),
    instant_column("next_attempt_at"),
    Column("attempt_count", Integer(), nullable=False),
    Column("response_code", Integer()),
    Column("latency_ms", Integer()),
    Column("error", Text()),
    instant_column("delivered_at"),
    json_column("attempts", nullable=False),
    *scoped_indexes("webhook_deliveries", "endpoint_id", "event_id"),
    # Per resource: the dispatcher asks for the deliveries of an entity still pending.
    Index("ix_webhook_deliveries_entity", "tenant_id", "environment_id", "entity_id", "delivery_status"),
    # Serves the dispatcher's claim of deliveries due across all scopes.
    Index("ix_webhook_deliveries_next_attempt_at", "next_attempt_at"),
)
