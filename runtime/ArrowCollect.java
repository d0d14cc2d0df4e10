import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.security.SocketAuthServer;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;

/**
 * A frame's rows collected to Python through Arrow (runtime/jvm_plans.py, to_arrow) in two
 * JVM calls: the query made and its collect started, then its end awaited.
 */
public class ArrowCollect {
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
}
