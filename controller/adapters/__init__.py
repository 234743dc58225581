"""Adapters: the only layer that touches the Hermes home (files, SQLite, locks, network).

Everything above this package is pure: it works on values the adapters observed and hands back
plans for the adapters to carry out.
"""
