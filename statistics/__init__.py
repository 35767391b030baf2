"""Statistic plugins, installed as ``snapcore.statistics`` (never as a top-level
``statistics``, which would shadow the standard library)."""
