"""Layer 2, data: what a release reads, from its arguments or from files.

- **Values**: every value that enters is read exactly or refused, by one rule
  (:func:`read_value`, :func:`read_values`, :func:`read_column`; categories by
  :func:`category_key`).
- **Columns and frames**: data of any container (mappings, NumPy, pandas, polars,
  pyarrow and other data frames) become the named columns a statistic reads
  (:class:`Dataset`, :func:`as_dataset`, :func:`read_dataset`).
- **Files**: CSV sources of any size read in blocks of records by one reader and one
  grammar (:class:`CsvReader`, :func:`read_csv`; one cell: :func:`cell`), Parquet
  files by their declared types (:func:`parquet_columns`, :func:`parquet_blocks`).
- **Missing values**: what is missing (:func:`is_missing`) and the policy
  (:class:`MissingPolicy`, :func:`check_missing_policy`, applied by
  :meth:`Dataset.apply_missing`).
- :class:`Neighbouring`: the neighbouring relations.
- The bundled example table (:func:`example_path`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.data._columns import (
        Dataset as Dataset,
        as_dataset as as_dataset,
    )
    from snapcore.data._example import (
        EXAMPLE_NAME as EXAMPLE_NAME,
        example_path as example_path,
    )
    from snapcore.data._files import (
        Block as Block,
        CsvReader as CsvReader,
        cell as cell,
        parquet_blocks as parquet_blocks,
        parquet_columns as parquet_columns,
        read_csv as read_csv,
    )
    from snapcore.data._frames import (
        read_dataset as read_dataset,
    )
    from snapcore.data._missing import (
        MissingPolicy as MissingPolicy,
        check_missing_policy as check_missing_policy,
        is_missing as is_missing,
    )
    from snapcore.data._neighbouring import (
        Neighbouring as Neighbouring,
    )
    from snapcore.data._values import (
        ACCEPTED as ACCEPTED,
        CategoryKey as CategoryKey,
        Column as Column,
        ReadValues as ReadValues,
        category_key as category_key,
        category_keys as category_keys,
        exact_ratio as exact_ratio,
        read_column as read_column,
        read_double as read_double,
        read_double_pair as read_double_pair,
        read_real as read_real,
        read_value as read_value,
        read_values as read_values,
        type_name as type_name,
    )

__getattr__, __dir__ = attach(__name__, __file__)
