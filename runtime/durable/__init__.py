"""Durable state: a database directory holding the catalog and every arrangement's batches.

``store`` owns the directory (its lock, its manifest replaced atomically per save, the
files no manifest names swept at open); ``log`` the commit log a transaction is appended
to before its write returns; ``records`` turns traces into the manifest's records and back
(batches held in the driver as Arrow IPC files of their own, batches held in the executors
as the Parquet files they already are); ``errors`` the error of a directory that cannot be
opened or read.
"""
