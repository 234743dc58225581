"""The engine: observe the home once, plan (core), apply, record, and the watch loop around it.

`observing` is the only module that reads the Hermes home for a plan; `applying` is the only
one that writes it; `reconciling` wires one pass; `watching` repeats it for the reconciler.
"""
