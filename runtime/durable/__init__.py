"""Durable state: a database directory holding the catalog and every arrangement's batches.

``store`` owns the directory (its lock, its manifest replaced atomically per commit, the
files no manifest names swept at open); ``records`` turns traces into the manifest's records
and back (batches held in the driver as Parquet files of their own, batches held in the
executors as the Parquet files they already are).
"""
