"""The tables of exports (issue 23): export tasks, the parts of their files, and the scheduled
tasks that make them. Each is registered in :data:`billingkit.storage.sql.tables.TABLES`."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Index, Integer, String, Table, Text

from billingkit.storage.sql.columns import (
    common_columns,
    instant_column,
    json_column,
    metadata,
    scoped_indexes,
)

__all__ = ["export_parts", "scheduled_tasks", "tasks"]

tasks = Table(
    "tasks",
    metadata,
    *common_columns(),
    Column("task_type", String(16), nullable=False),
    Column("entity_type", String(32), nullable=False),
    Column("scheduled_task_id", String(64)),
    Column("workflow_id", String(64)),
    Column("file_name", String(255)),
    Column("file_type", String(16), nullable=False),
    Column("task_status", String(16), nullable=False),
    Column("total_records", Integer()),
    Column("processed_records", Integer(), nullable=False),
    Column("successful_records", Integer(), nullable=False),
    Column("failed_records", Integer(), nullable=False),
    Column("error_summary", Text()),
    json_column("metadata", nullable=False),
    instant_column("started_at"),
    instant_column("completed_at"),
    instant_column("failed_at"),
    instant_column("run_at"),
    Column("cursor", String(255)),
    Column("parts", Integer(), nullable=False),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("tasks", "scheduled_task_id", "workflow_id"),
    # Serves the worker's claim of exports to write across all scopes.
    Index("ix_tasks_run_at", "run_at"),
)

export_parts = Table(
    "export_parts",
    metadata,
    *common_columns(),
    Column("task_id", String(64), nullable=False),
    Column("sequence", Integer(), nullable=False),
    Column("content", Text(), nullable=False),
    Column("record_count", Integer(), nullable=False),
    Index("ix_export_parts_scope_created", "tenant_id", "environment_id", "created_at"),
    # One row per (task, part): a page is written once, and the file is read in part order.
    Index(
        "uq_export_parts_task_id_sequence",
        "tenant_id",
        "environment_id",
        "task_id",
        "sequence",
        unique=True,
    ),
)

scheduled_tasks = Table(
    "scheduled_tasks",
    metadata,
    *common_columns(),
    Column("connection_id", String(255)),
    Column("entity_type", String(32), nullable=False),
    Column("interval", String(16), nullable=False),
    Column("enabled", Boolean(), nullable=False),
    json_column("job_config", nullable=False),
    instant_column("window_start", nullable=False),
    instant_column("next_run_at"),
    Column("version", Integer(), nullable=False),
    *scoped_indexes("scheduled_tasks"),
    # Serves the worker's claim of scheduled exports due across all scopes.
    Index("ix_scheduled_tasks_next_run_at", "next_run_at"),
)
