import org.apache.spark.sql.classic.Dataset;

/**
 * The row counts a query observed by name (RowCounts in jvm_plans.py), read in one JVM call
 * instead of five per name.
 */
public class ObservedCounts {
  /**
   * The row counts query observed, one per name of names (separated by newlines),
   * separated by spaces: "-" for a name it did not observe (RowCounts in jvm_plans.py).
   */
  public String counts(Dataset query, String names) {
    scala.collection.Map metrics = query.queryExecution().observedMetrics();
    String[] each = names.split("\n");
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < each.length; i++) {
      scala.Option found = metrics.get(each[i]);
      if (i > 0) {
        out.append(' ');
      }
      if (!found.isDefined()) {
        out.append('-');
      } else {
        org.apache.spark.sql.Row row = (org.apache.spark.sql.Row) found.get();
        out.append(row.length() > 0 ? row.getLong(0) : 0L);
      }
    }
    return out.toString();
  }
}
