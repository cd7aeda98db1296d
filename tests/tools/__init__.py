"""Helpers the tests use that are also run by hand (``python -m tests.tools.NAME``)."""
