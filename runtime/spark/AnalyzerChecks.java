import java.lang.reflect.Field;
import org.apache.spark.sql.catalyst.analysis.Analyzer;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.PreReadCheck$;

/**
 * The checks a session's analyzer runs over the whole plan of every new Dataset, less the
 * one that cannot fail on matview's plans (session.py, without_read_check).
 *
 * Spark's analyzer skips what it analysed before, but its extended checks visit every node
 * and expression of a plan each time a Dataset is made over it: every select, filter, join
 * or union a step's plan is built of. PreReadCheck rebuilds every expression of the plan to
 * look for input_file_name() and its kin over two sources, which matview's plans never
 * call: it was 73% of the checks' time and 5% of the driver's in an oracle test.
 */
public class AnalyzerChecks {
  /** Whether session's analyzer ran PreReadCheck, which it runs no more. */
  public boolean withoutReadCheck(SparkSession session) throws Exception {
    Analyzer analyzer = session.sessionState().analyzer();
    Field field;
    try {
      field = analyzer.getClass().getDeclaredField("extendedCheckRules");
    } catch (NoSuchFieldException e) {
      return false;
    }
    field.setAccessible(true);
    java.util.List kept = new java.util.ArrayList();
    boolean found = false;
    scala.collection.Iterator rules = ((scala.collection.Iterable) field.get(analyzer)).iterator();
    while (rules.hasNext()) {
      Object rule = rules.next();
      if (rule == PreReadCheck$.MODULE$) {
        found = true;
      } else {
        kept.add(rule);
      }
    }
    if (found) {
      field.set(analyzer, scala.jdk.javaapi.CollectionConverters.asScala(kept).toList());
    }
    return found;
  }
}
