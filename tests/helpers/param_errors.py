"""The check every validation test makes: a ParameterError whose message names what it must."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from snapcore.errors import ParameterError, SnapcoreError

__all__ = ["raises_param"]


@contextmanager
def raises_param(words: Iterable[str]) -> Iterator[Any]:
    """Expect a :class:`~snapcore.errors.ParameterError` (a ``SnapcoreError`` and a
    ``ValueError``) whose message contains every string of ``words``, in any order."""
    with pytest.raises(ParameterError) as info:
        yield info
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, SnapcoreError)
    msg = str(err)
    for word in words:
        assert word in msg, f"{word!r} not in message {msg!r}"
