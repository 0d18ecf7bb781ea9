"""Public helpers for testing code that uses billingkit.

``billingkit.testing.strategies`` holds hypothesis strategies, for the main API's requests
(:mod:`~billingkit.testing.inputs`) and the pricing core (needs the ``testing`` extra);
``billingkit.testing.pytest_plugin`` pytest fixtures (``billing``, ``test_clock``,
``billing_scope``; registered by the ``pytest11`` entry point); ``billingkit.testing.lifecycle`` a
state-machine test of the subscription lifecycle to run or extend (hypothesis);
``billingkit.testing.sandbox`` the in-memory billing and ready scope they are built on;
``billingkit.testing.contracts`` the contract suites of the storage and payment provider ports
(need pytest); ``billingkit.testing.razorpay_fake`` a local fake of Razorpay's API (standard
library only). None is imported here, so importing this package requires neither.
"""
