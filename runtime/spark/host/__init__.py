"""The keyed-operator host on Spark: the machinery every operator shares (the streaming host, the backfill
driver, the writer); each operator's Spark module is a thin registration on it."""
