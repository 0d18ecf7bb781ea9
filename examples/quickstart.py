"""billingkit quick start: runs on the embedded default (in-memory store), no setup needed.

    bash scripts/dev.sh run

It creates a tenant with test and production environments, adds customers through the library,
shows that environments are isolated, and reads the notification events the changes recorded.
"""

from __future__ import annotations

from billingkit import Billing, NotFound


def main() -> None:
    billing = Billing()
    setup = billing.bootstrap(tenant_name="Acme Analytics", owner_email="owner@acme.test")
    test_env, test_key = setup.environments[0]
    prod_env, _ = setup.environments[1]
    print(f"tenant {setup.tenant.id} ({setup.tenant.name})")
    print(f"  test environment {test_env.id}, API key {test_key.key.display_id}")

    test = billing.scope(setup.tenant.id, test_env.id)
    ada = test.customers.create(
        external_id="cust-ada",
        name="Ada Lovelace",
        email="ada@example.com",
        timezone="Europe/London",
        address_country="GB",
        metadata={"plan_hint": "pro"},
    )
    test.customers.create(external_id="cust-grace", name="Grace Hopper", timezone="America/New_York")
    test.customers.update(ada.id, name="Ada King, Countess of Lovelace")

    page = test.customers.list(limit=10)
    print(f"\n{page.total} customers in test:")
    for customer in page.items:
        print(f"  {customer.id}  {customer.external_id:<11} {customer.name} ({customer.timezone})")

    production = billing.scope(setup.tenant.id, prod_env.id)
    try:
        production.customers.get(ada.id)
    except NotFound as exc:
        print(f"\nproduction cannot see test data: {exc.code}: {exc.message}")

    # The same test environment, reached the way an API client would: by its key.
    as_key = billing.authenticate(test_key.api_key)
    print(f"the test key sees {as_key.customers.list().total} customers")

    print("\nnotifications recorded:")
    for event in test.notifications.list().items:
        print(f"  {event.created_at:%H:%M:%S}  {event.event_type:<17} {event.entity_id}")


if __name__ == "__main__":
    main()
