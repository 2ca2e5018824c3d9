"""Triage: read a failed run's log in one streaming pass and say which known failure it is."""
