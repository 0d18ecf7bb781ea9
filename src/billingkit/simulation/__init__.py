"""Pricing experiments: one-call simulations of months of billing, and usage generators.

``billingkit.simulate(...)`` (:func:`~billingkit.simulation.runner.simulate`) runs a catalogue,
customers and usage through an embedded in-memory ``Billing`` with a test clock and returns a
:class:`SimulationResult`; :class:`Poisson` and :class:`Steady` generate seeded usage;
``scoped.backtest(...)`` re-prices stored usage under a candidate plan. DataFrames, plots and
progress bars need the ``notebook`` extra (``pip install 'billingkit[notebook]'``); importing this
package does not.
"""

from billingkit.simulation.generators import Poisson, Steady, UsageGenerator
from billingkit.simulation.results import SimulationResult
from billingkit.simulation.runner import DEFAULT_START, sample_customers, simulate

__all__ = [
    "DEFAULT_START",
    "Poisson",
    "SimulationResult",
    "Steady",
    "UsageGenerator",
    "sample_customers",
    "simulate",
]
