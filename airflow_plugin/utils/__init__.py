"""Helpers shared by the timeweave hook, operators and trigger."""
