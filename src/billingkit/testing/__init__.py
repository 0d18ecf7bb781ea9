"""Public helpers for testing code that uses billingkit.

``billingkit.testing.strategies`` holds hypothesis strategies (needs the ``testing`` extra); it is
not imported here, so importing this package never requires hypothesis.
"""
