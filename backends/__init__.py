"""Arithmetic backends, installed as ``snapcore.backends``.

Each module defines a :class:`snapcore.Backend` subclass and registers it
through the ``snapcore_register_backends`` hook.
"""
