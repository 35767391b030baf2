"""Statistic plugins, installed as ``snapcore.statistics`` (never as a top-level
``statistics``, which would shadow the standard library).

- :mod:`snapcore.statistics.counting` — ``count`` and ``histogram``;
- :mod:`snapcore.statistics.moments` — ``sum``, ``mean``, ``variance``, ``covariance``.

Each module registers its statistics through the ``snapcore_register_statistics``
hook and is declared as an entry point, exactly like a third-party plugin.
"""
