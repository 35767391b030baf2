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
        Dataset,
        as_dataset,
    )
    from snapcore.data._example import (
        EXAMPLE_NAME,
        example_path,
    )
    from snapcore.data._files import (
        Block,
        cell,
        csv_blocks,
        csv_header,
        parquet_blocks,
        parquet_columns,
    )
    from snapcore.data._frames import (
        read_dataset,
    )
    from snapcore.data._missing import (
        MissingPolicy,
        apply_missing,
        check_missing_policy,
    )
    from snapcore.data._neighbouring import (
        Neighbouring,
    )
    from snapcore.data._values import (
        ACCEPTED,
        CategoryKey,
        Column,
        ReadValues,
        category_key,
        category_keys,
        exact_ratio,
        is_missing,
        read_column,
        read_double,
        read_double_pair,
        read_real,
        read_value,
        read_values,
        type_name,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_values": [
            "ACCEPTED",
            "CategoryKey",
            "Column",
            "ReadValues",
            "category_key",
            "category_keys",
            "exact_ratio",
            "is_missing",
            "read_column",
            "read_double",
            "read_double_pair",
            "read_real",
            "read_value",
            "read_values",
            "type_name",
        ],
        "_columns": ["Dataset", "as_dataset"],
        "_frames": ["read_dataset"],
        "_files": [
            "Block",
            "cell",
            "csv_blocks",
            "csv_header",
            "parquet_blocks",
            "parquet_columns",
        ],
        "_missing": ["MissingPolicy", "apply_missing", "check_missing_policy"],
        "_example": ["EXAMPLE_NAME", "example_path"],
        "_neighbouring": ["Neighbouring"],
    },
)

__all__ = [
    "ACCEPTED",
    "EXAMPLE_NAME",
    "Block",
    "CategoryKey",
    "Column",
    "Dataset",
    "MissingPolicy",
    "Neighbouring",
    "ReadValues",
    "apply_missing",
    "as_dataset",
    "category_key",
    "category_keys",
    "cell",
    "check_missing_policy",
    "csv_blocks",
    "csv_header",
    "exact_ratio",
    "example_path",
    "is_missing",
    "parquet_blocks",
    "parquet_columns",
    "read_column",
    "read_dataset",
    "read_double",
    "read_double_pair",
    "read_real",
    "read_value",
    "read_values",
    "type_name",
]
