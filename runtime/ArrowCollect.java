import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.security.SocketAuthServer;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.CollectMetrics;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.arrow.ArrowBatchStreamWriter;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.internal.SQLConf;

/**
 * A frame's rows collected to Python through Arrow (runtime/jvm_plans.py, to_arrow).
 *
 * A frame whose plan reads only local relations is planned once (prepare)
 * and each collect runs that physical plan again (run), reading the rows its slots
 * (runtime/templates.py) hold when it runs: the optimizer did not fold them into the plan.
 * Others are collected in two JVM calls, the query made and its collect started (start),
 * then its end awaited (finish).
 */
public class ArrowCollect {
  private static final String EXCLUDED = "spark.sql.optimizer.excludedRules";
  private static final String FOLDING =
      "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation";

  /**
   * The most local rows a kept RDD reads: its partitions hold a copy of them while its
   * frame lives (a larger plan's copies, run again, are made anew at each run).
   */
  private static final long KEPT_ROWS = 1 << 16;

  private final ConcurrentHashMap running = new ConcurrentHashMap();
  private final AtomicLong made = new AtomicLong();

  /**
   * Starts collecting a new query over the analysed plan of df, as
   * Dataset.collectAsArrowToPython does: returns the socket's port, its secret and the
   * collect's number, separated by spaces.
   */
  public String start(Dataset df) {
    Dataset query = Dataset$.MODULE$.ofRows(df.sparkSession(), df.queryExecution().analyzed());
    Object[] served = (Object[]) query.collectAsArrowToPython();
    Long id = Long.valueOf(made.incrementAndGet());
    running.put(id, new Object[] {served[2], query});
    return served[0] + " " + served[1] + " " + id;
  }

  /** Waits for collect id to end, raising its job's failure, and returns its query. */
  public Dataset finish(long id) {
    Object[] started = (Object[]) running.remove(Long.valueOf(id));
    ((SocketAuthServer) started[0]).getResult();
    return (Dataset) started[1];
  }

  /**
   * A query over the analysed plan of df and its physical plan, planned with the optimizer's
   * ConvertToLocalRelation left out (it evaluates operators over a local relation's rows
   * while planning), and, for a plan without exchanges over at most KEPT_ROWS local rows,
   * the RDD of its Arrow batches; null when the plan cannot be run again as planned: it
   * observes metrics (their listeners hear only of queries), has subqueries (their results
   * are kept by the plan), or reads leaves other than local relations (before planning, or
   * after: Spark reads cached data where a cached plan matches).
   */
  public Object[] prepare(Dataset df) {
    LogicalPlan analyzed = df.queryExecution().analyzed();
    if (!made(analyzed, CollectMetrics.class, LocalRelation.class)) {
      return null;
    }
    Object active = activate(df);
    try {
      SQLConf conf = df.sparkSession().sessionState().conf();
      boolean had = conf.contains(EXCLUDED);
      String before = had ? conf.getConfString(EXCLUDED) : null;
      conf.setConfString(EXCLUDED,
          had && before.length() > 0 ? before + "," + FOLDING : FOLDING);
      SparkPlan plan;
      Dataset query;
      try {
        query = Dataset$.MODULE$.ofRows(df.sparkSession(), analyzed);
        plan = query.queryExecution().executedPlan();
      } finally {
        if (had) {
          conf.setConfString(EXCLUDED, before);
        } else {
          conf.unsetConf(EXCLUDED);
        }
      }
      if (!made(plan, Void.class, LocalTableScanExec.class)) {
        return null;
      }
      java.util.List scans = new java.util.ArrayList();
      long rows = 0;
      for (scala.collection.Iterator leaves = plan.collectLeaves().iterator();
          leaves.hasNext();) {
        LocalTableScanExec scan = (LocalTableScanExec) leaves.next();
        scans.add(scan);
        rows += scan.rows().size();
      }
      // a job run again over the RDD of a plan with an exchange would read the exchange's
      // output of the first run
      if (!made(plan, Exchange.class, LocalTableScanExec.class) || rows > KEPT_ROWS) {
        return new Object[] {query, plan, null, null};
      }
      return new Object[] {query, plan, query.toArrowBatchRdd(plan), scans.toArray()};
    } finally {
      restore(active);
    }
  }

  /**
   * Makes df's session the thread's active one (a physical plan takes its session from
   * it), returning the one it replaces (an Option) for restore.
   */
  private static Object activate(Dataset df) {
    scala.Option before = org.apache.spark.sql.classic.SparkSession$.MODULE$.getActiveSession();
    org.apache.spark.sql.classic.SparkSession.setActiveSession(df.sparkSession());
    return before;
  }

  private static void restore(Object active) {
    scala.Option before = (scala.Option) active;
    if (before.isDefined()) {
      org.apache.spark.sql.classic.SparkSession.setActiveSession(
          (org.apache.spark.sql.SparkSession) before.get());
    } else {
      org.apache.spark.sql.classic.SparkSession.clearActiveSession();
    }
  }

  /**
   * Whether no node of plan is a refused one or has subqueries, and every leaf is a leaf
   * one.
   */
  private static boolean made(QueryPlan plan, Class refused, Class leaf) {
    if (refused.isInstance(plan) || !plan.subqueries().isEmpty()) {
      return false;
    }
    scala.collection.Iterator children = plan.children().iterator();
    if (!children.hasNext()) {
      return leaf.isInstance(plan);
    }
    while (children.hasNext()) {
      if (!made((QueryPlan) children.next(), refused, leaf)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Runs a prepared plan (made by prepare) in one job and writes its rows to path as an
   * Arrow stream. A plan without exchanges runs its RDD again, each local scan's rows
   * (the copies that its partitions hold) pointed first at the bytes of the rows its
   * relation holds now; another runs a copy of the plan, which has none of the plan's
   * state from earlier runs.
   */
  public void run(Object[] prepared, String path) throws Exception {
    Dataset query = (Dataset) prepared[0];
    Object[] collected;
    Object active = activate(query);
    try {
      RDD batches;
      if (prepared[2] == null) {
        batches = query.toArrowBatchRdd((SparkPlan) ((SparkPlan) prepared[1]).clone());
      } else {
        Object[] scans = (Object[]) prepared[3];
        for (int i = 0; i < scans.length; i++) {
          renew((LocalTableScanExec) scans[i]);
        }
        batches = (RDD) prepared[2];
      }
      collected = (Object[]) batches.collect();
    } finally {
      restore(active);
    }
    DataOutputStream out = new DataOutputStream(new FileOutputStream(path));
    try {
      ArrowBatchStreamWriter writer = new ArrowBatchStreamWriter(query.schema(), out,
          query.sparkSession().sessionState().conf().sessionLocalTimeZone(), true, false);
      writer.writeBatches(scala.collection.ArrayOps$.MODULE$.iterator$extension(collected));
      writer.end();
    } finally {
      out.close();
    }
  }

  private static final java.lang.reflect.Method COPIES = copies();

  private static java.lang.reflect.Method copies() {
    try {
      java.lang.reflect.Method method = LocalTableScanExec.class.getDeclaredMethod("unsafeRows",
          new Class[0]);
      method.setAccessible(true);
      return method;
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Points each row copy of scan (which its RDD's partitions hold) at its row's bytes. */
  private static void renew(LocalTableScanExec scan) throws Exception {
    Object[] copies = (Object[]) COPIES.invoke(scan, new Object[0]);
    scala.collection.Iterator rows = scan.rows().iterator();
    for (int i = 0; rows.hasNext(); i++) {
      Object row = rows.next();
      if (row instanceof UnsafeRow && copies[i] != row) {
        UnsafeRow now = (UnsafeRow) row;
        ((UnsafeRow) copies[i]).pointTo(now.getBaseObject(), now.getBaseOffset(),
            now.getSizeInBytes());
      }
    }
  }
}
