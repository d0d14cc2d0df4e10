import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.Partition;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext$;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.memory.MemoryManager;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.security.SocketAuthServer;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.execution.CollectLimitExec;
import org.apache.spark.sql.execution.CollectMetricsExec;
import org.apache.spark.sql.execution.CollectTailExec;
import org.apache.spark.sql.execution.LastAttemptAggregatingAccumulator;
import org.apache.spark.sql.execution.LocalTableScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.TakeOrderedAndProjectExec;
import org.apache.spark.sql.execution.arrow.ArrowBatchStreamWriter;
import org.apache.spark.sql.execution.exchange.Exchange;
import org.apache.spark.sql.internal.SQLConf;

/**
 * A frame's rows collected to Python through Arrow (runtime/jvm_plans.py, to_arrow).
 *
 * A frame whose plan reads only local relations is planned once (prepare)
 * and each collect runs that physical plan again (run), reading the rows its slots
 * (runtime/templates.py) hold when it runs: the optimizer did not fold them into the plan.
 * A plan without exchanges over at most keptRows local rows runs in the driver, where its
 * rows are: its partitions are computed by the plan's own operators in the calling thread,
 * each as a task would compute it (a task context of its own, with the session's SQL
 * settings and memory from the driver's memory manager), without a job to schedule, ship
 * to an executor and hear back from. Others are collected in two JVM calls, the query
 * made and its collect started (start), then its end awaited (finish).
 */
public class ArrowCollect {
  private static final String EXCLUDED = "spark.sql.optimizer.excludedRules";
  /**
   * The optimizer's rules a prepared plan is planned without: ConvertToLocalRelation (it
   * evaluates operators over a local relation's rows while planning; a slot's rows change),
   * and rules looking for what a plan of local relations without subqueries never has,
   * each walking the whole plan all the same (a tenth of the optimizer's time: JFR).
   */
  private static final String LEFT_OUT = "org.apache.spark.sql.catalyst.optimizer."
      + String.join(",org.apache.spark.sql.catalyst.optimizer.", "ConvertToLocalRelation",
          "OptimizeOneRowRelationSubquery", "InjectRuntimeFilter")
      + ",org.apache.spark.sql.execution.datasources.SchemaPruning"
      + ",org.apache.spark.sql.execution.datasources.PushVariantIntoScan"
      + ",org.apache.spark.sql.execution.dynamicpruning.PartitionPruning";

  /**
   * The setting choosing how operators make the projections, orderings and predicates they
   * build per partition: interpreted (NO_CODEGEN) in the driver. Generating their code again
   * at each run was half the time of a W4 round's plan; interpreting them costs far less.
   */
  private static final String FACTORY_MODE = "spark.sql.codegen.factoryMode";

  /** No operator refused: any plan of the right leaves. */
  private static final Class[] NONE = {};

  /**
   * The operators a plan computed in the driver may not have, as they shuffle: an exchange
   * (a run again would read its output of the first run), and a limit, a tail and an ordered
   * limit, whose RDD moves their child's rows into one partition with no exchange shown.
   */
  private static final Class[] SHUFFLING = {Exchange.class, CollectLimitExec.class,
      CollectTailExec.class, TakeOrderedAndProjectExec.class};

  /**
   * The call site every RDD and job of a collect records, in the local properties Spark reads
   * it from before walking the calling thread's stack for it (a fifth of the time building a
   * kept plan's RDD took: bench/README.md).
   */
  private static final String SITE = "matview collect";
  private static final String SHORT_SITE = "callSite.short", LONG_SITE = "callSite.long";

  private final ConcurrentHashMap running = new ConcurrentHashMap();
  private final AtomicLong made = new AtomicLong();

  /**
   * Starts collecting a new query over the analysed plan of df, as
   * Dataset.collectAsArrowToPython does: returns the socket's port, its secret and the
   * collect's number, separated by spaces.
   */
  public String start(Dataset df) {
    Dataset query = Dataset$.MODULE$.ofRows(df.sparkSession(), df.queryExecution().analyzed());
    Object[] served;
    Object[] active = activate(query);
    try {
      served = (Object[]) query.collectAsArrowToPython();
    } finally {
      restore(query, active);
    }
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
   * A query over the analysed plan of df and its physical plan, planned without the rules
   * LEFT_OUT, and, for a plan without exchanges over at most keptRows local rows, the RDD
   * of its Arrow batches and the plan's metrics collectors; null when the plan cannot be
   * run again as planned: it has subqueries (the plan keeps their results), reads leaves
   * other than local relations (before planning, or after: Spark reads cached data where a
   * cached plan matches), or observes metrics and is not computed in the driver.
   */
  public Object[] prepare(Dataset df, long keptRows) {
    LogicalPlan analyzed = df.queryExecution().analyzed();
    if (!made(analyzed, NONE, LocalRelation.class)) {
      return null;
    }
    Object[] active = activate(df);
    try {
      SQLConf conf = df.sparkSession().sessionState().conf();
      boolean had = conf.contains(EXCLUDED);
      String before = had ? conf.getConfString(EXCLUDED) : null;
      conf.setConfString(EXCLUDED,
          had && before.length() > 0 ? before + "," + LEFT_OUT : LEFT_OUT);
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
      if (!made(plan, NONE, LocalTableScanExec.class)) {
        return null;
      }
      java.util.List collectors = new java.util.ArrayList();
      nodes(plan, CollectMetricsExec.class, collectors);
      java.util.List scans = new java.util.ArrayList();
      long rows = 0;
      for (scala.collection.Iterator leaves = plan.collectLeaves().iterator();
          leaves.hasNext();) {
        LocalTableScanExec scan = (LocalTableScanExec) leaves.next();
        scans.add(scan);
        rows += scan.rows().size();
      }
      boolean here = made(plan, SHUFFLING, LocalTableScanExec.class) && rows <= keptRows;
      if (!here) {
        return collectors.isEmpty() ? new Object[] {query, plan, null, null, null} : null;
      }
      return new Object[] {query, plan, query.toArrowBatchRdd(plan), scans.toArray(),
          collectors.toArray()};
    } finally {
      restore(df, active);
    }
  }

  /**
   * Makes df's session the thread's active one (a physical plan takes its session from it)
   * and, unless the thread has one, SITE its call site; returns what restore puts back.
   */
  private static Object[] activate(Dataset df) {
    scala.Option before = org.apache.spark.sql.classic.SparkSession$.MODULE$.getActiveSession();
    org.apache.spark.sql.classic.SparkSession.setActiveSession(df.sparkSession());
    SparkContext context = df.sparkSession().sparkContext();
    String site = context.getLocalProperty(SHORT_SITE);
    if (site == null) {
      context.setLocalProperty(SHORT_SITE, SITE);
      context.setLocalProperty(LONG_SITE, SITE);
    }
    return new Object[] {before, site};
  }

  private static void restore(Dataset df, Object[] active) {
    scala.Option before = (scala.Option) active[0];
    if (before.isDefined()) {
      org.apache.spark.sql.classic.SparkSession.setActiveSession(
          (org.apache.spark.sql.SparkSession) before.get());
    } else {
      org.apache.spark.sql.classic.SparkSession.clearActiveSession();
    }
    if (active[1] == null) {
      SparkContext context = df.sparkSession().sparkContext();
      context.setLocalProperty(SHORT_SITE, null);
      context.setLocalProperty(LONG_SITE, null);
    }
  }

  /** Whether no node of plan is refused or has subqueries, and every leaf is a leaf one. */
  private static boolean made(QueryPlan plan, Class[] refused, Class leaf) {
    for (Class cls : refused) {
      if (cls.isInstance(plan)) {
        return false;
      }
    }
    if (!plan.subqueries().isEmpty()) {
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

  /** Adds the nodes of plan of class cls to out. */
  private static void nodes(QueryPlan plan, Class cls, java.util.List out) {
    if (cls.isInstance(plan)) {
      out.add(plan);
    }
    for (scala.collection.Iterator children = plan.children().iterator(); children.hasNext();) {
      nodes((QueryPlan) children.next(), cls, out);
    }
  }

  /**
   * Runs a prepared plan (made by prepare) and writes its rows to path as an Arrow stream.
   * A plan without exchanges computes its RDD again in the driver (computed), each local
   * scan's rows (the copies that its partitions hold) pointed first at the bytes of the
   * rows its relation holds now, and its metrics collectors emptied; the metrics it
   * observed complete the session's observations, as a query's end does (and it returns
   * its query, whose observed metrics are the run's, when it has some). Another runs a copy
   * of the plan in one job, which has none of the plan's state from earlier runs.
   */
  public Dataset run(Object[] prepared, String path) throws Exception {
    Dataset query = (Dataset) prepared[0];
    Object[] collected;
    Object[] active = activate(query);
    try {
      if (prepared[2] == null) {
        collected = (Object[]) query.toArrowBatchRdd(
            (SparkPlan) ((SparkPlan) prepared[1]).clone()).collect();
      } else {
        synchronized (prepared) { // its operators keep state of the run in the plan
          Object[] scans = (Object[]) prepared[3];
          for (int i = 0; i < scans.length; i++) {
            renew((LocalTableScanExec) scans[i]);
          }
          Object[] collectors = (Object[]) prepared[4];
          for (int i = 0; i < collectors.length; i++) {
            ((CollectMetricsExec) collectors[i]).resetMetrics();
          }
          collected = computed((RDD) prepared[2], query);
          for (int i = 0; i < collectors.length; i++) {
            settle((CollectMetricsExec) collectors[i]);
          }
          if (collectors.length > 0) {
            query.sparkSession().observationManager().tryComplete(query.queryExecution());
          }
        }
      }
    } finally {
      restore(query, active);
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
    return prepared[2] != null && ((Object[]) prepared[4]).length > 0 ? query : null;
  }

  /**
   * The elements of every partition of rdd, each computed in this thread as a task computes
   * it: with a task context of its own (the session's SQL settings, which a job passes its
   * tasks, as its local properties, with per-partition objects interpreted: FACTORY_MODE;
   * memory from the driver's memory manager), completed or failed as a task's, its memory
   * released after.
   */
  private static Object[] computed(RDD rdd, Dataset query) {
    Properties settings = new Properties();
    scala.collection.Iterator confs =
        query.sparkSession().sessionState().conf().getAllConfs().iterator();
    while (confs.hasNext()) {
      scala.Tuple2 setting = (scala.Tuple2) confs.next();
      settings.setProperty((String) setting._1(), (String) setting._2());
    }
    settings.setProperty(FACTORY_MODE, "NO_CODEGEN");
    MemoryManager memoryManager = memoryManager();
    Partition[] partitions = rdd.partitions();
    java.util.List out = new java.util.ArrayList();
    for (int i = 0; i < partitions.length; i++) {
      TaskMemoryManager memory = new TaskMemoryManager(memoryManager, 0L);
      TaskContextImpl task = new TaskContextImpl(0, 0, partitions[i].index(), 0L, 0,
          partitions.length, memory, settings, null, TaskMetrics.empty(), ONE_CPU,
          (scala.collection.immutable.Map) scala.collection.immutable.Map$.MODULE$.empty());
      TaskContext$.MODULE$.setTaskContext(task);
      try {
        scala.collection.Iterator rows = rdd.iterator(partitions[i], task);
        while (rows.hasNext()) {
          out.add(rows.next());
        }
        task.markTaskCompleted(scala.Option.empty());
      } catch (RuntimeException e) {
        task.markTaskFailed(e);
        throw e;
      } finally {
        TaskContext$.MODULE$.unset();
        memory.cleanUpAllAllocatedMemory();
      }
    }
    return out.toArray();
  }

  private static final scala.math.BigDecimal ONE_CPU =
      new scala.math.BigDecimal(java.math.BigDecimal.ONE, java.math.MathContext.DECIMAL128);

  /**
   * The driver's memory manager (its SparkEnv's), read by reflection: Janino cannot compile
   * a call of SparkEnv's methods (resolving them loads protobuf classes the driver's class
   * path lacks).
   */
  private static MemoryManager memoryManager() {
    try {
      Class module = Class.forName("org.apache.spark.SparkEnv$");
      Object env = module.getMethod("get", new Class[0]).invoke(
          module.getField("MODULE$").get(null), new Object[0]);
      java.lang.reflect.Field field =
          Class.forName("org.apache.spark.SparkEnv").getDeclaredField("_memoryManager");
      field.setAccessible(true);
      return (MemoryManager) field.get(env);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static final java.lang.reflect.Method COPIES =
      hidden(LocalTableScanExec.class, "unsafeRows");

  private static final java.lang.reflect.Method ACCUMULATOR =
      hidden(CollectMetricsExec.class, "accumulator");

  /** The private method name of cls, without parameters, made callable. */
  private static java.lang.reflect.Method hidden(Class cls, String name) {
    try {
      java.lang.reflect.Method method = cls.getDeclaredMethod(name, new Class[0]);
      method.setAccessible(true);
      return method;
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Makes the metrics that collector's partitions, computed in the driver, merged into its
   * accumulator its collected metrics: a last-attempt accumulator reports the values its
   * jobs' tasks sent, of which a run in the driver has none, unless given the driver's.
   */
  private static void settle(CollectMetricsExec collector) throws Exception {
    Object accumulator = ACCUMULATOR.invoke(collector, new Object[0]);
    if (accumulator instanceof LastAttemptAggregatingAccumulator) {
      LastAttemptAggregatingAccumulator last = (LastAttemptAggregatingAccumulator) accumulator;
      last.setValueIfOnDriverSide(last.value());
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
