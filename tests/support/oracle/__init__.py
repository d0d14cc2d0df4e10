"""The DuckDB oracle harness: randomized workloads (``workload``), the view query shapes they
maintain (``queries``), result comparison (``compare``), the runner applying one workload to
matview and DuckDB side by side (``harness``) and the shared SparkSession (``fixtures``)."""
