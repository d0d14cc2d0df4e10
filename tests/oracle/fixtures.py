"""The SparkSession every oracle test shares: one per pytest run, since starting Spark takes
many seconds. Test modules load it with ``pytest_plugins = ["oracle.fixtures"]``."""

from __future__ import annotations

import pytest
from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    return start_session()
