"""Worlds and helpers several test modules build on (fixtures are in tests/conftest.py)."""
