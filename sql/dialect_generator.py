"""The generator of matview's SQL dialect (``dialect``): PostgreSQL's, printing back the
statements the dialect adds (``dialect_nodes``).
"""

from __future__ import annotations

from matview.sql.dialect_nodes import Explain, MutuallyRecursive, RecursiveBinding, Subscribe
from sqlglot import exp
from sqlglot.generators.postgres import PostgresGenerator


def _explain_sql(self: PostgresGenerator, expression: Explain) -> str:
    stage, fmt = expression.args.get("stage"), expression.args.get("format")
    options = expression.args.get("options")
    target = self.sql(expression, "this")
    if expression.args.get("view"):
        target = f"MATERIALIZED VIEW {target}"
    if stage == "analyze":
        return " ".join(["EXPLAIN ANALYZE", *([f"AS {fmt.upper()}"] if fmt else []), target])
    words = ["EXPLAIN"]
    if stage:
        words.append("OPTIMIZER TRACE" if stage == "trace" else f"{stage.upper()} PLAN")
    if options:
        words.append("WITH (" + ", ".join(o.name.upper() for o in options) + ")")
    if fmt:
        words.append(f"AS {fmt.upper()}")
    if len(words) > 1:
        words.append("FOR")
    return " ".join([*words, target])


def _mutually_recursive_sql(self: PostgresGenerator, expression: MutuallyRecursive) -> str:
    option = ""
    if expression.args.get("limit") is not None:
        option = (f" ({str(expression.args['at_limit']).upper()} AT RECURSION LIMIT "
                  f"{self.sql(expression, 'limit')})")
    return f"WITH MUTUALLY RECURSIVE{option} {self.expressions(expression, flat=True)}"


def _recursive_binding_sql(self: PostgresGenerator, expression: RecursiveBinding) -> str:
    columns = ", ".join(self.sql(c) for c in expression.args["columns"])
    return (f"{self.sql(expression, 'alias')} ({columns}) AS "
            f"({self.sql(expression, 'this')})")


class MatviewGenerator(PostgresGenerator):
    """PostgreSQL's generator, printing matview's EXPLAIN, SHOW, SUBSCRIBE and WITH
    MUTUALLY RECURSIVE back."""

    TRANSFORMS = {**PostgresGenerator.TRANSFORMS, Explain: _explain_sql,
                  Subscribe: lambda self, e: " ".join(filter(None, (
                      "SUBSCRIBE", self.sql(e, "this"), e.args["options"].this
                      if e.args.get("options") else ""))),
                  MutuallyRecursive: _mutually_recursive_sql,
                  RecursiveBinding: _recursive_binding_sql}

    def show_sql(self, expression: exp.Show) -> str:
        target = self.sql(expression, "target")
        before = " " if expression.name.startswith("CREATE ") else " FROM "
        return f"SHOW {expression.name}" + (f"{before}{target}" if target else "")
