"""DB-API 2.0 (PEP 249) exceptions, and the translation of internal errors into them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException


class Warning(Exception):  # noqa: A001 - the name PEP 249 prescribes
    """Important warnings (PEP 249)."""


class Error(Exception):
    """Base class of matview's errors (PEP 249)."""


class InterfaceError(Error):
    """The connection or cursor was misused (e.g. used after ``close``)."""


class DatabaseError(Error):
    """An error of the database."""


class DataError(DatabaseError):
    """A value could not be computed: division by zero, overflow, an invalid cast."""


class OperationalError(DatabaseError):
    """The engine could not run (e.g. no Java to start Spark)."""


class QueryCanceled(OperationalError):
    """A statement stopped by ``Connection.interrupt``, a cancel request or
    ``statement_timeout`` (SQLSTATE 57014)."""


class IntegrityError(DatabaseError):
    """A relational integrity rule was broken."""


class InternalError(DatabaseError):
    """matview itself failed; please report it."""


class ProgrammingError(DatabaseError):
    """The statement is wrong: syntax, unknown names, type mismatches, misuse of objects."""


class NotSupportedError(DatabaseError):
    """The statement uses a feature matview does not support (yet)."""


_SPARK_CONDITIONS = {
    "DIVIDE_BY_ZERO": "division by zero",
    "INTERVAL_DIVIDED_BY_ZERO": "division by zero",
    "REMAINDER_BY_ZERO": "division by zero",
    "ARITHMETIC_OVERFLOW": "integer out of range",
    "BINARY_ARITHMETIC_OVERFLOW": "integer out of range",
    "CAST_OVERFLOW": "value out of range for its type",
    "CAST_OVERFLOW_IN_TABLE_INSERT": "value out of range for its type",
    "NUMERIC_VALUE_OUT_OF_RANGE": "numeric field overflow",
    "CAST_INVALID_INPUT": "invalid input syntax",
}


def _spark_message(error: PySparkException) -> tuple[type[Error], str]:
    condition = error.getCondition() or ""
    detail = str(error).splitlines()[0] if str(error) else condition
    if "OutOfMemory" in str(error):
        return OperationalError, f"Spark ran out of memory: {detail}"
    status = getattr(error, "getGrpcStatusCode", None)  # Spark Connect's client errors
    if status is not None and getattr(status(), "name", "") in ("UNAVAILABLE", "CANCELLED"):
        return OperationalError, f"lost the connection to the Spark Connect server: {detail}"
    if condition.startswith("USER_RAISED_EXCEPTION"):
        # raised by matview's own lowering (a table function's row limit, a negative
        # multiplicity in a read): the message is already the user's
        text = detail.removeprefix("[USER_RAISED_EXCEPTION]").strip()
        return DataError, text.split(" SQLSTATE:")[0]
    for key, message in _SPARK_CONDITIONS.items():
        if condition.startswith(key) or key in detail:
            return DataError, f"{message} ({detail})"
    return InternalError, f"Spark failed: {detail}"


def _java_text(error: Py4JJavaError) -> str:
    """The Java exception behind ``error``, asked of the JVM, which may be gone: then what
    Python knows."""
    try:
        return str(error.java_exception) or "unknown Java error"
    except Exception:  # no JVM to answer
        return f"{error.errmsg} (the JVM did not answer)"


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise errors from the layers below as PEP 249 exceptions."""
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError
    from pyspark.errors import PySparkException

    from matview.ir.functions import EvalError
    from matview.runtime.durable.errors import StateError
    from matview.runtime.io.constraints import ConstraintViolation
    from matview.runtime.render import PlanError
    from matview.runtime.spark.session import JavaMissingError, SparkUnreachableError
    from matview.sql.errors import InvalidValueError, SqlError, UnsupportedError

    try:
        yield
    except Error:
        raise
    except RecursionError as e:
        raise ProgrammingError("statement is too deeply nested (too many nested expressions "
                               "or parentheses)") from e
    except UnsupportedError as e:
        raise NotSupportedError(str(e)) from e
    except InvalidValueError as e:
        raise DataError(str(e)) from e
    except SqlError as e:
        raise ProgrammingError(str(e)) from e
    except ConstraintViolation as e:
        raise IntegrityError(str(e)) from e
    except EvalError as e:
        raise DataError(str(e)) from e
    except (JavaMissingError, SparkUnreachableError, StateError) as e:
        raise OperationalError(str(e)) from e
    except PlanError as e:
        raise NotSupportedError(str(e)) from e
    except PySparkException as e:
        kind, message = _spark_message(e)
        raise kind(message) from e
    except Py4JJavaError as e:
        text = _java_text(e)
        if "OutOfMemory" in text:
            raise OperationalError("Spark ran out of memory: " + text.splitlines()[0]) from e
        raise InternalError("Spark failed: " + text.splitlines()[0]) from e
    except (Py4JNetworkError, ConnectionError) as e:
        raise OperationalError(f"lost the connection to Spark's JVM: {e}") from e
    except Py4JError as e:
        raise OperationalError(f"Spark's JVM failed a call: {str(e).splitlines()[0]}") from e
    except MemoryError as e:
        raise OperationalError("out of memory") from e
    except Exception as e:
        raise InternalError(f"matview failed ({type(e).__name__}: {e}); please report it") from e
