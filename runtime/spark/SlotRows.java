import org.apache.spark.sql.api.python.PythonSQLUtils;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.types.DataTypeUtils$;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.types.DataType$;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Slots (runtime/templates.py), each made in one JVM call (make), and their rows set in one
 * JVM call: those of several slots pointed at UnsafeRow bytes made in Python (point), or a
 * slot's read from an Arrow stream file (read: what PythonSQLUtils.toDataFrame does with
 * the file's batches, without making a DataFrame, and analysing its plan, only to take its
 * rows).
 */
public class SlotRows {
  /**
   * The rows arrays of slots (make), by number, held weakly: a slot dropped in Python lets
   * its array go; and each one's schema.
   */
  private final java.util.HashMap slots = new java.util.HashMap();

  private final java.util.HashMap schemas = new java.util.HashMap();

  /** The projections making UnsafeRows of a schema's rows (read), by schema. */
  private final java.util.HashMap projections = new java.util.HashMap();

  private int registered = 0;

  /**
   * A new slot of capacity rows of the schema json (a Spark StructType's JSON, whose last
   * field is the boolean telling live rows from padding, live) in session: returns its
   * number, the frame of its live rows' other columns (a Dataset over a local relation
   * whose rows are the array's, wrapped without a copy, analysed once) and its rows array,
   * every entry a padding row (every field NULL but live, false). Made from Python, the
   * same slot took two dozen JVM calls.
   */
  public synchronized Object[] make(SparkSession session, String json, int capacity) {
    StructType schema = (StructType) DataType$.MODULE$.fromJson(json);
    int fields = schema.fields().length;
    byte[] dead = padding(fields);
    Object[] rows = new Object[capacity];
    for (int n = 0; n < capacity; n++) {
      UnsafeRow row = new UnsafeRow(fields);
      row.pointTo(dead, dead.length);
      rows[n] = row;
    }
    LocalRelation relation = new LocalRelation(DataTypeUtils$.MODULE$.toAttributes(schema),
        scala.collection.immutable.ArraySeq$.MODULE$.unsafeWrapArray(rows), false,
        scala.Option.empty());
    scala.collection.immutable.Seq output = relation.output();
    Dataset frame = Dataset$.MODULE$.ofRows(session, new Project(
        (scala.collection.immutable.Seq) output.take(fields - 1),
        new Filter((Expression) output.last(), relation)));
    for (java.util.Iterator held = slots.entrySet().iterator(); held.hasNext();) {
      java.util.Map.Entry entry = (java.util.Map.Entry) held.next();
      if (((java.lang.ref.WeakReference) entry.getValue()).get() == null) {
        schemas.remove(entry.getKey());
        held.remove();
      }
    }
    registered++;
    slots.put(Integer.valueOf(registered), new java.lang.ref.WeakReference(rows));
    schemas.put(Integer.valueOf(registered), schema);
    return new Object[] {Integer.valueOf(registered), frame, rows};
  }

  /**
   * The bytes of a padding row of fields fields: every one NULL but the last, false
   * (shared by the padding entries of a slot, which are pointed elsewhere, never written).
   */
  private static byte[] padding(int fields) {
    byte[] bytes = new byte[UnsafeRow.calculateBitSetWidthInBytes(fields) + 8 * fields];
    UnsafeRow dead = new UnsafeRow(fields);
    dead.pointTo(bytes, bytes.length);
    for (int i = 0; i < fields - 1; i++) {
      dead.setNullAt(i);
    }
    return bytes;
  }

  /**
   * Overwrites the first entries of slot's rows with the rows of the Arrow stream file at
   * path, of the slot's schema (times in UTC), and points the others at a padding row. An
   * entry keeps its UnsafeRow, pointed at the new row's bytes: Spark's optimizer copies a
   * local relation's sequence of rows (not the rows), and a plan planned once and run
   * again (ArrowCollect.run) reads them through its copy.
   */
  public synchronized void read(String path, int slot) {
    Object[] rows = (Object[]) ((java.lang.ref.WeakReference) slots.get(
        Integer.valueOf(slot))).get();
    StructType schema = (StructType) schemas.get(Integer.valueOf(slot));
    UnsafeProjection projection = (UnsafeProjection) projections.get(schema);
    if (projection == null) {
      projection = UnsafeProjection.create(schema);
      projections.put(schema, projection);
    }
    scala.collection.Iterator read = ArrowConverters$.MODULE$.fromBatchIterator(
        PythonSQLUtils.readArrowStreamFromFile(path), schema, "UTC", true, false, null);
    int n = 0;
    for (; read.hasNext(); n++) {
      UnsafeRow row = projection.apply((InternalRow) read.next()).copy();
      ((UnsafeRow) rows[n]).pointTo(row.getBaseObject(), row.getBaseOffset(),
          row.getSizeInBytes());
    }
    byte[] padding = padding(schema.fields().length);
    for (; n < rows.length; n++) {
      ((UnsafeRow) rows[n]).pointTo(padding, padding.length);
    }
  }

  /**
   * Sets the rows of several slots in one call. data holds their rows one slot
   * after the other, as UnsafeRow bytes made in Python (runtime/unsafe_rows.py); parts
   * describes each slot's share as four numbers separated by spaces, parts by semicolons:
   * the slot's number, the bytes of its rows, the bytes of a row and its number of fields.
   * Each slot's entries are pointed at its rows, and the entries after them at a padding
   * row (every field NULL but the last, false), each entry keeping its UnsafeRow, as in
   * read.
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
      byte[] padding = padding(fields);
      int live = length / size;
      for (int n = 0; n < rows.length; n++) {
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
