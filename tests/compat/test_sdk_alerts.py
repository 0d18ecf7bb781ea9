"""Alert settings and the alert log through the official SDK (``sdk.alert_settings``,
``sdk.alerts``)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from flexprice import Flexprice
from flexprice.models import errors

from billingkit import Billing, TestClock
from billingkit.facade import Scoped
from tests.alert_story import build_story
from tests.compat.conftest import known, status_and_code


def test_settings_round_trip(sdk: Flexprice, env: Scoped) -> None:
    story = build_story(env)
    created = known(
        sdk.alert_settings.create_alert_settings(
            entity_type="subscription",
            entity_id=story.subscription.id,
            config={"critical": {"threshold": "100.00", "condition": "above"}},
        )
    )
    assert created.id and created.entity_type == "subscription"
    assert created.entity_id == story.subscription.id and created.enabled is True
    assert created.config is not None and created.config.alert_enabled is True
    assert created.config.critical is not None and created.config.critical.threshold == "100.00"
    assert created.status == "published"

    got = known(sdk.alert_settings.get_alert_settings(id=created.id))
    assert got.id == created.id and got.config == created.config

    updated = known(
        sdk.alert_settings.update_alert_settings(
            id=created.id, config={"warning": {"threshold": "50", "condition": "above"}}
        )
    )
    assert updated.config is not None and updated.config.warning is not None
    assert updated.config.warning.threshold == "50"
    assert updated.config.critical is not None and updated.config.critical.threshold == "100.00"

    group = known(
        sdk.alert_settings.create_alert_settings(
            entity_type="group",
            entity_id=story.group_id,
            parent_entity_id=story.subscription.id,
            parent_entity_type="subscription",
            config={"info": {"threshold": "5", "condition": "above"}},
        )
    )
    assert group.parent_entity_id == story.subscription.id
    found = known(sdk.alert_settings.query_alert_settings(entity_type="group"))
    assert [s.id for s in found.items or []] == [group.id]
    assert found.pagination is not None and found.pagination.total == 1

    sdk.alert_settings.delete_alert_settings(id=created.id)
    with pytest.raises(errors.FlexpriceError) as caught:
        sdk.alert_settings.get_alert_settings(id=created.id)
    assert status_and_code(caught.value) == (404, "not_found")


def test_a_bad_setting_is_a_400_the_sdk_reads(sdk: Flexprice, env: Scoped) -> None:
    story = build_story(env)
    with pytest.raises(errors.FlexpriceError) as caught:
        sdk.alert_settings.create_alert_settings(
            entity_type="subscription_line_item",
            entity_id=story.line_item_id,
            config={"critical": {"threshold": "1", "condition": "above"}},
        )
    assert status_and_code(caught.value) == (400, "validation_error")


def test_the_alert_log_after_a_threshold_is_reached(
    sdk: Flexprice, env: Scoped, billing: Billing, clock: TestClock
) -> None:
    story = build_story(env)
    sdk.alert_settings.create_alert_settings(
        entity_type="subscription",
        entity_id=story.subscription.id,
        config={"critical": {"threshold": "100.00", "condition": "above"}},
    )
    story.use(150, clock.now())
    billing.run_due(clock.advance(timedelta(minutes=2)))
    log = known(sdk.alerts.query_alert_log(entity_id=story.subscription.id))
    (entry,) = log.items or []
    assert entry.alert_type == "subscription_spend"
    assert entry.alert_status == "in_alarm"
    assert entry.entity_type == "subscription"
    assert entry.customer_id == story.customer_id
    assert entry.alert_info is not None and entry.alert_info.value_at_time == clock.now()
    assert entry.alert_info.alert_settings is not None
    assert entry.alert_info.alert_settings.critical is not None
    assert Decimal(entry.alert_info.alert_settings.critical.threshold or "0") == Decimal("100")
    none = known(sdk.alerts.query_alert_log(alert_status="ok"))
    assert (none.items or []) == []
