import org.apache.spark.sql.api.python.PythonSQLUtils;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * The rows of slots (runtime/templates.py) set in one JVM call: those of several slots
 * pointed at UnsafeRow bytes made in Python (point), or a slot's read from an Arrow stream
 * file (read: what PythonSQLUtils.toDataFrame does with the file's batches, without making
 * a DataFrame, and analysing its plan, only to take its rows).
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

  /**
   * The rows arrays of slots (register), by number, held weakly: a slot dropped in Python
   * lets its array go.
   */
  private final java.util.HashMap slots = new java.util.HashMap();

  private int registered = 0;

  /** Registers a slot's rows array for point, returning its number. */
  public synchronized int register(Object[] rows) {
    for (java.util.Iterator held = slots.values().iterator(); held.hasNext();) {
      if (((java.lang.ref.WeakReference) held.next()).get() == null) {
        held.remove();
      }
    }
    registered++;
    slots.put(Integer.valueOf(registered), new java.lang.ref.WeakReference(rows));
    return registered;
  }

  /**
   * Sets the rows of several registered slots in one call. data holds their rows one slot
   * after the other, as UnsafeRow bytes made in Python (runtime/unsafe_rows.py); parts
   * describes each slot's share as four numbers separated by spaces, parts by semicolons:
   * the slot's number, the bytes of its rows, the bytes of a row and its number of fields.
   * Each slot's entries are pointed at its rows, and the entries after them at a padding
   * row: every field NULL but the last, false. An entry that holds an UnsafeRow keeps it,
   * as in read; an empty entry receives a row of its own.
   */
  public synchronized void point(byte[] data, String parts) {
    long at = Platform.BYTE_ARRAY_OFFSET;
    String[] shares = parts.split(";");
    for (int p = 0; p < shares.length; p++) {
      String[] share = shares[p].split(" ");
      Object[] rows = (Object[]) ((java.lang.ref.WeakReference) slots.get(
          Integer.valueOf(share[0]))).get();
      int length = Integer.parseInt(share[1]);
      int size = Integer.parseInt(share[2]);
      int fields = Integer.parseInt(share[3]);
      byte[] padding = new byte[size];
      UnsafeRow dead = new UnsafeRow(fields);
      dead.pointTo(padding, size);
      for (int i = 0; i < fields - 1; i++) {
        dead.setNullAt(i);
      }
      int live = length / size;
      for (int n = 0; n < rows.length; n++) {
        if (!(rows[n] instanceof UnsafeRow)) {
          rows[n] = new UnsafeRow(fields);
        }
        if (n < live) {
          ((UnsafeRow) rows[n]).pointTo(data, at + (long) n * size, size);
        } else {
          ((UnsafeRow) rows[n]).pointTo(padding, size);
        }
      }
      at += length;
    }
  }
}
