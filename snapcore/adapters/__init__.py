"""Adapters that embed snapcore in other DP libraries, one module each:
:mod:`snapcore.adapters.opendp` (OpenDP measurements with privacy maps) and
:mod:`snapcore.adapters.diffprivlib` (a drop-in ``Snapping`` and accountant bridges).

Each imports its library at module level; nothing else in snapcore imports an adapter,
so the library stays optional.
"""
