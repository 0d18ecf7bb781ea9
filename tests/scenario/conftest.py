"""Scenario fixtures: the HTTP client and keys of tests/http."""

from tests.http.conftest import client, prod_key, test_key

__all__ = ["client", "prod_key", "test_key"]
