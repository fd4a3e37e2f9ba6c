package org.james.consistency;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.data.TupleValue;
import com.datastax.oss.driver.api.core.data.UdtValue;
import com.datastax.oss.driver.internal.core.util.concurrent.CompletableFutures;
import com.datastax.spark.connector.cql.CassandraConnector;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.LongAccumulator;
import scala.collection.JavaConverters;

/**
 * A table's rows in given token ranges, read in the executors through the Spark Cassandra Connector's own sessions
 * (its connection, authentication and TLS settings): one Spark task per range, a paged
 * {@code SELECT ... WHERE token(pk) > ? AND token(pk) <= ?} at the given consistency. The connector's DataFrame
 * reads cannot be restricted to a token range (it splits the ring itself), and reading the ranges through the Python
 * driver costs about twice the connector's scan in CPU: this is the same read on the JVM side.
 */
public final class TokenRangeScan {
  private TokenRangeScan() {}

  /**
   * The rows of {@code keyspace.table} in the ranges (start, end], as a DataFrame of {@code schema}: its first field
   * is the range's index (an int), the others are the table's columns as the connector presents them (uuids as
   * strings, sets and lists as arrays, timestamps). With {@code hashed} columns, the schema's last field is a long,
   * their digest: an xxhash64 over each one's value as Cassandra serialized it (its length, -1 for null, then its
   * bytes), which spares decoding and converting them. Equal serialized values give equal digests, so the caller
   * hashes only columns whose serialization is one per value, of the same types in the tables it compares.
   *
   * <p>Each task reads at most {@code rowsPerSecondPerTask} rows a second (0: as fast as it can): its share of a
   * per-cluster limit. With {@code pageLatencyMicros}, each page request's latency (asked to answered) is added to
   * it, for the driver to read after the job.
   */
  public static Dataset<Row> scan(
      SparkSession spark,
      String keyspace,
      String table,
      String[] partitionKey,
      StructType schema,
      String[] hashed,
      int[] indexes,
      long[] starts,
      long[] ends,
      String consistency,
      int pageSize,
      double rowsPerSecondPerTask,
      LongAccumulator pageLatencyMicros) {
    List<long[]> ranges = new ArrayList<>();
    for (int i = 0; i < indexes.length; i++) {
      ranges.add(new long[] {indexes[i], starts[i], ends[i]});
    }
    StructField[] fields = schema.fields();
    StructField[] converted = Arrays.copyOfRange(fields, 1, fields.length - (hashed.length > 0 ? 1 : 0));
    String columns =
        Stream.concat(Stream.of(converted).map(StructField::name), Stream.of(hashed))
            .map(name -> '"' + name + '"')
            .collect(Collectors.joining(", "));
    String token = "token(" + String.join(", ", partitionKey) + ")";
    String cql =
        "SELECT " + columns + " FROM " + keyspace + "." + table + " WHERE " + token + " > ? AND " + token + " <= ?";
    JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
    RangeReader reader =
        new RangeReader(
            CassandraConnector.apply(connectorConf(spark)),
            cql,
            consistency,
            pageSize,
            converted,
            hashed.length,
            rowsPerSecondPerTask,
            pageLatencyMicros);
    return spark.createDataFrame(context.parallelize(ranges, Math.max(ranges.size(), 1)).mapPartitions(reader), schema);
  }

  /** The session's connector settings (those set on a running session too), over the context's. */
  static SparkConf connectorConf(SparkSession spark) {
    SparkConf conf = spark.sparkContext().getConf().clone();
    for (Map.Entry<String, String> entry : JavaConverters.mapAsJavaMap(spark.conf().getAll()).entrySet()) {
      if (entry.getKey().startsWith("spark.cassandra.")) {
        conf.set(entry.getKey(), entry.getValue());
      }
    }
    return conf;
  }

  static final class RangeReader implements FlatMapFunction<Iterator<long[]>, Row> {
    private static final long serialVersionUID = 1L;
    private final CassandraConnector connector;
    private final String cql;
    private final String consistency;
    private final int pageSize;
    private final DataType[] types;
    private final int hashed;
    private final double rowsPerSecond;
    private final LongAccumulator pageLatencyMicros;

    RangeReader(
        CassandraConnector connector,
        String cql,
        String consistency,
        int pageSize,
        StructField[] converted,
        int hashed,
        double rowsPerSecond,
        LongAccumulator pageLatencyMicros) {
      this.connector = connector;
      this.cql = cql;
      this.consistency = consistency;
      this.pageSize = pageSize;
      this.types = Stream.of(converted).map(StructField::dataType).toArray(DataType[]::new);
      this.hashed = hashed;
      this.rowsPerSecond = rowsPerSecond;
      this.pageLatencyMicros = pageLatencyMicros;
    }

    /** The page request, its latency added to the accumulator when it is answered. */
    private CompletionStage<AsyncResultSet> timed(CompletionStage<AsyncResultSet> request) {
      if (pageLatencyMicros == null) {
        return request;
      }
      long asked = System.nanoTime();
      return request.whenComplete((page, error) -> pageLatencyMicros.add((System.nanoTime() - asked) / 1000));
    }

    @Override
    public Iterator<Row> call(Iterator<long[]> ranges) {
      CqlSession session = connector.openSession();
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskContext done) -> session.close());
      }
      Pace pace = new Pace(rowsPerSecond);
      return new Iterator<Row>() {
        private Iterator<com.datastax.oss.driver.api.core.cql.Row> rows = java.util.Collections.emptyIterator();
        // The range's next page, asked for as soon as the one before it arrived: Cassandra reads it while this task
        // converts and writes the rows it has.
        private CompletionStage<AsyncResultSet> nextPage;
        private int index;

        @Override
        public boolean hasNext() {
          while (!rows.hasNext()) {
            if (nextPage != null) {
              AsyncResultSet page = CompletableFutures.getUninterruptibly(nextPage);
              // The next page is asked for only once this one's rows are within the task's rate.
              pace.take(page.remaining());
              nextPage = page.hasMorePages() ? timed(page.fetchNextPage()) : null;
              rows = page.currentPage().iterator();
              continue;
            }
            if (!ranges.hasNext()) {
              if (task == null) {
                session.close();
              }
              return false;
            }
            long[] range = ranges.next();
            index = (int) range[0];
            SimpleStatement statement =
                SimpleStatement.newInstance(cql, range[1], range[2])
                    .setConsistencyLevel(DefaultConsistencyLevel.valueOf(consistency))
                    .setPageSize(pageSize);
            nextPage = timed(session.executeAsync(statement));
          }
          return true;
        }

        @Override
        public Row next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          com.datastax.oss.driver.api.core.cql.Row row = rows.next();
          Object[] values = sparkValues(row, types, 1, hashed > 0 ? 1 : 0);
          values[0] = index;
          if (hashed > 0) {
            values[values.length - 1] = digest(row, types.length, hashed);
          }
          return RowFactory.create(values);
        }
      };
    }
  }

  /**
   * A task's pace: after {@code rows} rows, not before {@code rows / rowsPerSecond} seconds from its start. Waiting
   * once a page is in hand, before asking for the next, keeps Cassandra within the rate plus one page per task.
   */
  static final class Pace {
    private final double rowsPerSecond;
    private final long start = System.nanoTime();
    private long rows;

    Pace(double rowsPerSecond) {
      this.rowsPerSecond = rowsPerSecond;
    }

    void take(int count) {
      if (rowsPerSecond <= 0) {
        return;
      }
      rows += count;
      long wait = start + (long) (rows * 1e9 / rowsPerSecond) - System.nanoTime();
      if (wait > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt(); // the task is being killed: let it end
        }
      }
    }
  }

  /** The xxhash64 of the serialized values of the row's {@code count} columns from {@code first}. */
  static long digest(com.datastax.oss.driver.api.core.cql.Row row, int first, int count) {
    long hash = DIGEST_SEED;
    for (int column = first; column < first + count; column++) {
      ByteBuffer value = row.getBytesUnsafe(column);
      if (value == null) {
        hash = XXH64.hashInt(-1, hash);
        continue;
      }
      int length = value.remaining();
      hash = XXH64.hashInt(length, hash);
      if (value.hasArray()) {
        long offset = Platform.BYTE_ARRAY_OFFSET + value.arrayOffset() + value.position();
        hash = XXH64.hashUnsafeBytes(value.array(), offset, length, hash);
      } else {
        byte[] bytes = new byte[length];
        value.duplicate().get(bytes);
        hash = XXH64.hashUnsafeBytes(bytes, Platform.BYTE_ARRAY_OFFSET, length, hash);
      }
    }
    return hash;
  }

  private static final long DIGEST_SEED = 42;

  /**
   * The values of the row's first columns, as Spark takes them for {@code types}, with {@code before} free slots
   * before them and {@code after} after them.
   */
  static Object[] sparkValues(com.datastax.oss.driver.api.core.cql.Row row, DataType[] types, int before, int after) {
    Object[] values = new Object[before + types.length + after];
    for (int column = 0; column < types.length; column++) {
      values[before + column] = sparkValue(row.getObject(column), types[column]);
    }
    return values;
  }

  /** A value read by the Java driver as the external type Spark's row encoder takes for the connector's column type. */
  static Object sparkValue(Object value, DataType type) {
    if (value == null) {
      return null;
    }
    if (type instanceof ArrayType) {
      DataType element = ((ArrayType) type).elementType();
      List<Object> items = new ArrayList<>();
      for (Object item : (Collection<?>) value) {
        items.add(sparkValue(item, element));
      }
      return JavaConverters.asScalaBuffer(items).toList();
    }
    if (type instanceof MapType) {
      MapType map = (MapType) type;
      Map<Object, Object> entries = new LinkedHashMap<>();
      for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
        entries.put(sparkValue(entry.getKey(), map.keyType()), sparkValue(entry.getValue(), map.valueType()));
      }
      return JavaConverters.mapAsScalaMap(entries);
    }
    if (type instanceof StructType) {
      StructField[] fields = ((StructType) type).fields();
      Object[] values = new Object[fields.length];
      for (int field = 0; field < fields.length; field++) {
        Object item =
            value instanceof UdtValue
                ? ((UdtValue) value).getObject(CqlIdentifier.fromInternal(fields[field].name()))
                : ((TupleValue) value).getObject(field);
        values[field] = sparkValue(item, fields[field].dataType());
      }
      return RowFactory.create(values);
    }
    if (value instanceof InetAddress) {
      return ((InetAddress) value).getHostAddress();
    }
    if (value instanceof Instant) {
      return Timestamp.from((Instant) value);
    }
    if (value instanceof LocalDate) {
      return java.sql.Date.valueOf((LocalDate) value);
    }
    if (value instanceof ByteBuffer) {
      ByteBuffer buffer = ((ByteBuffer) value).duplicate();
      byte[] bytes = new byte[buffer.remaining()];
      buffer.get(bytes);
      return bytes;
    }
    if (value instanceof BigInteger) {
      return new BigDecimal((BigInteger) value);
    }
    if (value instanceof LocalTime) {
      return ((LocalTime) value).toNanoOfDay();
    }
    // Not typeName(): Spark derives it from the class name with string operations at every call (a tenth of a
    // night's JVM time when it was asked once per value).
    if (type instanceof StringType && !(value instanceof String)) {
      return value.toString();
    }
    return value;
  }
}
