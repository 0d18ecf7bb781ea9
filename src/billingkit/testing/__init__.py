"""Public helpers for testing code that uses billingkit.

``billingkit.testing.strategies`` holds hypothesis strategies (needs the ``testing`` extra);
``billingkit.testing.contracts`` the contract suites of the storage and payment provider ports
(need pytest); ``billingkit.testing.razorpay_fake`` a local fake of Razorpay's API (standard
library only). None is imported here, so importing this package requires neither.
"""
