"""The lakes a source follows (``matview.sources``): a Delta Lake table's versions
(``delta_versions``), a folder of Parquet files (``parquet_folder``), and the SQL columns of
their Arrow schemas (``arrow_fields``)."""
