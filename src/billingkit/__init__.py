"""billingkit: embeddable subscription and usage billing."""
