import org.apache.spark.sql.api.python.PythonSQLUtils;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.types.StructType;

/**
 * The rows of a slot (runtime/templates.py) read from an Arrow stream file in one JVM call:
 * what PythonSQLUtils.toDataFrame does with the file's batches, without making a DataFrame
 * (and analysing its plan) only to take its rows.
 */
public class SlotRows {
  /**
   * Overwrites the first entries of rows with the rows of the Arrow stream file at path, of
   * the given schema (times in UTC). An entry that holds an UnsafeRow keeps it, pointed at
   * the new row's bytes: Spark's optimizer copies a local relation's sequence of rows (not
   * the rows), and a plan planned once and run again (ArrowCollect.run) reads them through
   * its copy. An empty entry receives a row of its own.
   */
  public void read(String path, StructType schema, UnsafeProjection projection, Object[] rows) {
    scala.collection.Iterator read = ArrowConverters$.MODULE$.fromBatchIterator(
        PythonSQLUtils.readArrowStreamFromFile(path), schema, "UTC", true, false, null);
    int n = 0;
    while (read.hasNext()) {
      UnsafeRow row = projection.apply((InternalRow) read.next()).copy();
      if (rows[n] instanceof UnsafeRow) {
        ((UnsafeRow) rows[n]).pointTo(row.getBaseObject(), row.getBaseOffset(),
            row.getSizeInBytes());
      } else {
        rows[n] = row;
      }
      n++;
    }
  }
}
