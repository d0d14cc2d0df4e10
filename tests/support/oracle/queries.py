"""The view query shapes the oracle tests maintain over the workload schema.

Every query is in the SQL subset matview and DuckDB read with the same meaning: no integer
division (DuckDB's ``/`` on integers is float division), no ``round`` at ties (prices never
end in 5 cents), no casts of floating or decimal values to text, no ordering of mixed-case
text (all text values are lower case), and doubles are multiples of 1/4 so their sums are
exact in any order. ``avg`` is compared with a tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp


@dataclass(frozen=True)
class Query:
    """A view query shape: the view's name and its SQL."""

    name: str
    sql: str

    def reads(self, table: str) -> bool:
        """Whether the query reads ``table``."""
        tree = sqlglot.parse_one(self.sql, read="duckdb")
        return table in {t.name for t in tree.find_all(exp.Table)}


QUERIES: tuple[Query, ...] = (
    Query("scalar_filter", """
        SELECT id, region, score * 2 + 1 AS twice,
               CASE WHEN score > 5 THEN 'high' WHEN score IS NULL THEN 'none' ELSE 'low' END
                   AS band,
               NOT (score < 3) AS not_low, since
        FROM customers
        WHERE region IS NOT NULL OR score BETWEEN 2 AND 6"""),
    Query("three_valued", """
        SELECT id, score > 3 AND region = 'north' AS high_north,
               score > 3 OR region = 'north' AS high_or_north,
               NOT (score = 4) AS not_four, score IN (1, 2, NULL) AS in_list,
               region NOT IN ('north', 'south') AS not_in_list, vip IS NULL AS vip_unknown,
               vip AND score > 5 AS vip_high
        FROM customers"""),
    Query("text_functions", """
        SELECT id, upper(note) AS upper_note, lower(upper(note)) AS lower_note,
               length(note) AS len, substr(note, 2, 3) AS middle,
               note || '#' || CAST(id AS TEXT) AS tag, note LIKE '%rr%' AS has_rr,
               note NOT LIKE 'b%' AS not_b, concat(note, '/', cust, '/', amount) AS joined,
               concat_ws('-', note, id, cust) AS parts, replace(note, 'r', '*') AS starred,
               greatest(id, cust, 5) AS top, least(amount, id * 10) AS low,
               split_part(note, 'r', 2) AS after_r, split_part(note, 'r', -1) AS last_r,
               regexp_replace(note, '(r+)(.)', '<\\2\\1>', 'g') AS marked
        FROM orders
        WHERE length(note) > 5 OR note IS NULL"""),
    Query("numeric_functions", """
        SELECT id, COALESCE(amount, -1) AS amount_or, NULLIF(cust, 3) AS not_three,
               CAST(amount AS DOUBLE) * 0.5 AS half, abs(amount - 50) AS distance,
               round(price, 1) AS rounded, price * 2 AS doubled,
               CAST(price AS NUMERIC(12, 3)) AS wider, round(CAST(cust AS DOUBLE) / 3, 2) AS third,
               CAST(placed AS DATE) AS placed_day
        FROM orders"""),
    Query("group_by_null_keys", """
        SELECT region, count(*) AS n, count(score) AS scored, sum(score) AS total,
               min(score) AS lowest, max(score) AS highest
        FROM customers
        GROUP BY region"""),
    Query("avg_by_customer", """
        SELECT cust, avg(amount) AS avg_amount, avg(price) AS avg_price,
               sum(price) AS total_price, count(note) AS notes
        FROM orders
        GROUP BY cust"""),
    Query("global_aggregate", """
        SELECT count(*) AS n, count(note) AS notes, sum(amount) AS total,
               min(price) AS cheapest, max(price) AS dearest, avg(amount) AS mean,
               max(note) AS last_note, min(placed) AS first_placed
        FROM orders"""),
    Query("minmax_under_deletes", """
        SELECT sku, min(qty) AS min_qty, max(qty) AS max_qty, max(weight) AS heaviest,
               min(weight) AS lightest, sum(weight) AS total_weight
        FROM items
        GROUP BY sku"""),
    Query("join_on", """
        SELECT c.region, o.id, o.amount, c.vip
        FROM customers c JOIN orders o ON c.id = o.cust AND o.amount > c.score * 5"""),
    Query("join_in_where", """
        SELECT o.id, o.note, i.sku, i.qty
        FROM orders o, items i
        WHERE o.id = i.order_id AND i.qty > 1"""),
    Query("three_way_group_having", """
        SELECT c.region, count(*) AS n, sum(i.qty) AS qty, max(o.amount) AS biggest,
               min(i.sku) AS first_sku
        FROM customers c
        JOIN orders o ON o.cust = c.id
        JOIN items i ON i.order_id = o.id
        GROUP BY c.region
        HAVING count(*) > 1"""),
    Query("three_way_where", """
        SELECT c.id AS customer, o.id AS order_id, i.sku, o.price
        FROM customers c, orders o, items i
        WHERE c.id = o.cust AND i.order_id = o.id AND c.score >= 3"""),
    Query("distinct_over_join", """
        SELECT DISTINCT c.region, i.sku
        FROM customers c
        JOIN orders o ON c.id = o.cust
        JOIN items i ON o.id = i.order_id"""),
    Query("distinct_rows", """
        SELECT DISTINCT sku, qty FROM items"""),
    Query("union_all", """
        SELECT id, note FROM orders WHERE amount > 50
        UNION ALL
        SELECT order_id, sku FROM items WHERE qty < 3"""),
    Query("cte_and_subquery", """
        WITH totals AS (SELECT cust, sum(amount) AS total, count(*) AS n
                        FROM orders GROUP BY cust)
        SELECT t.region, count(*) AS customers, sum(t.total) AS total, sum(t.n) AS orders
        FROM (SELECT c.region, b.total, b.n
              FROM totals b JOIN customers c ON c.id = b.cust) AS t
        GROUP BY t.region"""),
    Query("case_coalesce_group_keys", """
        SELECT CASE WHEN score >= 5 THEN 'high' WHEN score < 5 THEN 'low' END AS band,
               COALESCE(region, 'unknown') AS area, count(*) AS n, sum(score) AS total
        FROM customers
        GROUP BY CASE WHEN score >= 5 THEN 'high' WHEN score < 5 THEN 'low' END,
                 COALESCE(region, 'unknown')"""),
    Query("cross_join_filter", """
        SELECT c.id, c.score, i.sku, i.qty, r.rank
        FROM customers c CROSS JOIN items i
             JOIN (VALUES ('north', 1), ('east', 2), ('east', 3)) AS r(region, rank)
             ON r.region = c.region
        WHERE c.score > i.qty"""),
    Query("having_without_key_output", """
        SELECT count(*) AS n, max(qty) - min(qty) AS spread, sum(weight) * 2 AS double_weight
        FROM items
        GROUP BY order_id
        HAVING sum(qty) > 4 OR count(*) >= 3"""),
    Query("self_join", """
        SELECT a.id AS lower_id, b.id AS higher_id, a.cust
        FROM orders a JOIN orders b ON a.cust = b.cust
        WHERE a.id < b.id"""),
    Query("aggregate_of_aggregate", """
        SELECT n, count(*) AS orders, sum(total) AS qty
        FROM (SELECT order_id, count(*) AS n, sum(qty) AS total
              FROM items GROUP BY order_id) AS per_order
        GROUP BY n"""),
    Query("dates_and_booleans", """
        SELECT CAST(o.placed AS DATE) AS placed_day, c.vip, count(*) AS n, min(c.since) AS earliest
        FROM orders o JOIN customers c ON c.id = o.cust
        WHERE o.placed >= TIMESTAMP '2024-01-01 12:00:00' AND c.since <= DATE '2024-01-08'
        GROUP BY CAST(o.placed AS DATE), c.vip"""),
    Query("aggregate_over_union", """
        SELECT k, sum(v) AS total, count(*) AS n
        FROM (SELECT cust AS k, amount AS v FROM orders
              UNION ALL
              SELECT id, score FROM customers) AS u
        GROUP BY k"""),
    Query("join_with_aggregate", """
        WITH per_order AS (SELECT order_id, sum(qty) AS total, max(weight) AS heaviest
                           FROM items GROUP BY order_id)
        SELECT o.id, o.cust, p.total, p.heaviest
        FROM orders o JOIN per_order p ON p.order_id = o.id
        WHERE p.total > 2"""),
    # outer joins: customers.id, orders.cust and items.order_id hold NULLs and repeat
    Query("left_join_residual", """
        SELECT c.id, c.region, o.id AS order_id, o.amount
        FROM customers c LEFT JOIN orders o ON o.cust = c.id AND o.amount > c.score * 10"""),
    Query("left_join_one_side_filters", """
        SELECT o.id, o.cust, c.region, c.vip
        FROM orders o LEFT OUTER JOIN customers c ON c.id = o.cust AND c.score >= 3
             AND o.note <> 'banana'"""),
    Query("right_join", """
        SELECT o.id AS order_id, o.note, i.sku, i.qty
        FROM orders o RIGHT JOIN items i ON i.order_id = o.id AND o.amount >= 30"""),
    Query("full_join_using", """
        SELECT id, c.region, o.amount, c.id AS customer, o.id AS buyer
        FROM (SELECT id, region FROM customers) AS c
        FULL JOIN (SELECT cust AS id, amount FROM orders) AS o USING (id)"""),
    Query("inner_then_left_join", """
        SELECT c.region, o.id, i.sku, i.qty
        FROM customers c JOIN orders o ON o.cust = c.id
        LEFT JOIN items i ON i.order_id = o.id AND i.qty > 1"""),
    Query("left_join_aggregate", """
        SELECT c.id, c.region, p.n, p.total
        FROM customers c
        LEFT JOIN (SELECT cust, count(*) AS n, sum(amount) AS total
                   FROM orders GROUP BY cust) AS p ON p.cust = c.id"""),
    Query("full_join_general_grouped", """
        SELECT c.region, count(*) AS n, count(i.sku) AS skus, sum(i.qty) AS qty
        FROM customers c FULL JOIN items i ON i.qty = c.score OR i.order_id = c.id
        GROUP BY c.region"""),
    Query("left_anti_join", """
        SELECT o.id, o.cust, o.note
        FROM orders o LEFT JOIN customers c ON c.id = o.cust
        WHERE c.id IS NULL"""),
    # subqueries in expressions (issue 15), decorrelated into joins and reductions
    Query("exists_and_not_exists", """
        SELECT o.id, o.cust, o.amount
        FROM orders o
        WHERE EXISTS (SELECT 1 FROM items i WHERE i.order_id = o.id AND i.qty > 1)
          AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust AND c.vip)"""),
    Query("not_in_with_nulls", """
        SELECT c.id, c.region, c.score NOT IN (SELECT i.qty FROM items i) AS fresh
        FROM customers c
        WHERE c.id IN (SELECT cust FROM orders WHERE amount >= 50)"""),
    Query("correlated_scalar_counts", """
        SELECT o.id, (SELECT count(*) FROM items i WHERE i.order_id = o.id) AS n,
               (SELECT max(i.qty) FROM items i WHERE i.order_id = o.id) AS most
        FROM orders o
        WHERE o.amount > (SELECT min(p.amount) FROM orders p WHERE p.cust = o.cust)"""),
    Query("scalar_subquery_in_having", """
        SELECT c.region, count(*) AS n
        FROM customers c
        GROUP BY c.region
        HAVING count(*) * 3 >= (SELECT count(*) FROM customers WHERE vip)"""),
)
