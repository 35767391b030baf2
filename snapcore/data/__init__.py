"""Layer 2, data: what a release reads, from its arguments or from files.

- **Values**: every value that enters is read exactly or refused, by one rule
  (:func:`read_value`, :func:`read_values`, :func:`read_column`; categories by
  :func:`category_key`).
- **Columns and frames**: data of any container (mappings, NumPy, pandas, polars,
  pyarrow and other data frames) become the named columns a statistic reads
  (:class:`Dataset`, :func:`as_dataset`, :func:`read_dataset`).
- **Files**: CSV and Parquet files read in blocks of columns (:func:`csv_header`,
  :func:`csv_blocks`, :func:`parquet_columns`, :func:`parquet_blocks`), each CSV field
  outside them by one rule (:func:`cell`).
- **Missing values**: the policy (:class:`MissingPolicy`, :func:`check_missing_policy`,
  :func:`apply_missing`).
- :class:`Neighbouring`: the neighbouring relations.
- The bundled example table (:func:`example_path`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.data._columns import (
        Dataset as Dataset,
    )
    from snapcore.data._columns import (
        as_dataset as as_dataset,
    )
    from snapcore.data._example import (
        EXAMPLE_NAME as EXAMPLE_NAME,
    )
    from snapcore.data._example import (
        example_path as example_path,
    )
    from snapcore.data._files import (
        Block as Block,
    )
    from snapcore.data._files import (
        cell as cell,
    )
    from snapcore.data._files import (
        csv_blocks as csv_blocks,
    )
    from snapcore.data._files import (
        csv_header as csv_header,
    )
    from snapcore.data._files import (
        parquet_blocks as parquet_blocks,
    )
    from snapcore.data._files import (
        parquet_columns as parquet_columns,
    )
    from snapcore.data._frames import (
        read_dataset as read_dataset,
    )
    from snapcore.data._missing import (
        MissingPolicy as MissingPolicy,
    )
    from snapcore.data._missing import (
        apply_missing as apply_missing,
    )
    from snapcore.data._missing import (
        check_missing_policy as check_missing_policy,
    )
    from snapcore.data._neighbouring import (
        Neighbouring as Neighbouring,
    )
    from snapcore.data._values import (
        ACCEPTED as ACCEPTED,
    )
    from snapcore.data._values import (
        CategoryKey as CategoryKey,
    )
    from snapcore.data._values import (
        Column as Column,
    )
    from snapcore.data._values import (
        ReadValues as ReadValues,
    )
    from snapcore.data._values import (
        category_key as category_key,
    )
    from snapcore.data._values import (
        category_keys as category_keys,
    )
    from snapcore.data._values import (
        exact_ratio as exact_ratio,
    )
    from snapcore.data._values import (
        is_missing as is_missing,
    )
    from snapcore.data._values import (
        read_column as read_column,
    )
    from snapcore.data._values import (
        read_double as read_double,
    )
    from snapcore.data._values import (
        read_double_pair as read_double_pair,
    )
    from snapcore.data._values import (
        read_real as read_real,
    )
    from snapcore.data._values import (
        read_value as read_value,
    )
    from snapcore.data._values import (
        read_values as read_values,
    )
    from snapcore.data._values import (
        type_name as type_name,
    )

__getattr__, __dir__ = attach(__name__, __file__)
