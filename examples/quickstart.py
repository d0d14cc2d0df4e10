"""matview in two minutes: tables, a materialized view maintained incrementally on Spark,
a stream of changes, and the SUBSCRIBE diffs at each step."""

import matview


def show(title: str, rows: list[tuple[object, ...]]) -> None:
    print(f"\n{title}")
    for row in rows:
        print("   ", row)


con = matview.connect(clock=0)  # a manual logical clock, so the times below are readable
con.execute("CREATE TABLE customers (id INT, region TEXT)")
con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT, note TEXT)")
con.execute("INSERT INTO customers VALUES (1, 'eu'), (2, 'us')")

con.execute("""
    CREATE MATERIALIZED VIEW by_region AS
    SELECT c.region, count(*) AS n, sum(o.amount) AS total, max(o.amount) AS top
    FROM orders o JOIN customers c ON o.cust = c.id
    WHERE o.amount > 0
    GROUP BY c.region
""")
print(con.execute("EXPLAIN SELECT c.region, count(*) FROM orders o JOIN customers c "
                  "ON o.cust = c.id WHERE o.amount > 0 GROUP BY c.region").fetchone()[0])

sub = con.subscribe("by_region")
con.advance_time(10)
steps = [
    "INSERT INTO orders VALUES (1, 1, 50, NULL), (2, 2, 70, 'x'), (3, 1, 20, 'y')",
    "DELETE FROM orders WHERE id = 1",
    "UPDATE customers SET region = 'apac' WHERE id = 2",
    "INSERT INTO orders VALUES (4, 2, -5, 'refund'), (5, 2, 30, NULL)",
]
for sql in steps:
    con.execute(sql)
    print(f"\n@{con.now}: {sql}")
    show("by_region is now:", con.execute("SELECT * FROM by_region ORDER BY region").fetchall())
    show("SUBSCRIBE diffs (mz_timestamp, mz_diff, region, n, total, top):", sub.fetch())

con.advance_time(20)
con.execute("DELETE FROM orders WHERE cust = 1")
con.execute("INSERT INTO orders VALUES (6, 1, 99, NULL)")
show(f"two transactions, one fetch (@{con.now}):", sub.fetch())
show("by_region at the end:", con.execute("SELECT * FROM by_region ORDER BY region").fetchall())
