"""JVM objects made once per Spark context: whatever a step would otherwise ask the JVM
for again (``made_once``), JVM classes looked up by their whole name (``java_class``), and
the Java helpers (``jvm_helper``): some steps take several JVM calls whatever their plans,
and a helper does them in one — the ``*.java`` files beside this module, compiled in the
driver's JVM when a session first needs them by Janino, the compiler Spark's generated code
goes through."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

T = TypeVar("T")

_made: weakref.WeakKeyDictionary[SparkContext, dict[Hashable, Any]] = (
    weakref.WeakKeyDictionary())
_made_remote: dict[Hashable, Any] = {}


def made_once(spark: SparkSession, key: Hashable, make: Callable[[], T]) -> T:
    """What ``make`` returns, made once per Spark context (JVM objects live in one) and
    ``key``; in Spark Connect sessions once per ``key``."""
    made = _made_remote if is_remote() else _made.setdefault(spark.sparkContext, {})
    if key not in made:
        made[key] = make()
    return made[key]  # type: ignore[no-any-return]


def java_class(spark: SparkSession, name: str) -> Any:
    """The JVM class of fully qualified ``name``, looked up once per Spark context and by its
    whole name: py4j resolves ``jvm.org.apache...`` a name at a time, each prefix a class
    lookup that fails after searching every jar on the class path (``jvm.java.lang.Object``
    1-2 ms, ``getattr(jvm, "java.lang.Object")`` 0.03-0.1 ms)."""
    return made_once(spark, ("class", name), lambda: getattr(spark._jvm, name))  # type: ignore


def jvm_helper(spark: SparkSession, name: str) -> Any:
    """An instance of the Java class ``name`` (``runtime/<name>.java``), compiled and made
    once per Spark context (not in Spark Connect sessions, which have no JVM here)."""
    def made() -> Any:
        gateway = spark.sparkContext._gateway  # type: ignore[union-attr]
        compiler = java_class(spark, "org.codehaus.janino.SimpleCompiler")()
        compiler.setParentClassLoader(spark._jsparkSession.getClass().getClassLoader())
        compiler.cook(f"{name}.java", (Path(__file__).parent / f"{name}.java").read_text())
        cls = compiler.getClassLoader().loadClass(name)
        return cls.getDeclaredConstructor(
            gateway.new_array(java_class(spark, "java.lang.Class"), 0)).newInstance(
                gateway.new_array(java_class(spark, "java.lang.Object"), 0))

    return made_once(spark, ("jvm helper", name), made)
