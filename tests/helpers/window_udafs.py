"""A user's pandas UDAF for the window tests (importable by Spark's Python workers and by the job's ``functions``)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql.functions import pandas_udf


@pandas_udf("double")
def median(values: pd.Series) -> float:
    """The median of the non-NULL values (NaN when none: pandas' rule, the same through every door)."""
    return float(values.median())


__all__ = ["median"]
