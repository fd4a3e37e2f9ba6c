package org.james.consistency;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.type.DataType;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.ListType;
import com.datastax.oss.driver.internal.core.util.concurrent.CompletableFutures;
import com.datastax.spark.connector.cql.CassandraConnector;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.sql.Timestamp;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The rows of a table at given primary keys, read a partition at a time in the executors through the connector's
 * sessions: {@code SELECT ... WHERE <partition key and leading clustering columns> = ? AND <last clustering column>
 * IN ?}. A point read inside a large partition (a mailbox's messageIdTable rows) costs Cassandra about as much as
 * reading tens of that partition's rows in one request, and the connector's direct join sends one request per key.
 */
public final class PartitionRead {
  private PartitionRead() {}

  /**
   * The rows of {@code keyspace.table} at the keys of {@code groups}, as a DataFrame of {@code schema} (the table's
   * columns as the connector presents them: uuids as strings, sets as arrays). Each row of {@code groups} holds the
   * values of {@code groupColumns} (the partition key and the clustering columns before the last one), then an
   * array of values of the last clustering column, {@code inColumn}, all as the connector presents them. An array is
   * read in requests of at most {@code maxIn} values, at most {@code inFlight} requests at a time per task.
   */
  public static Dataset<Row> read(
      SparkSession spark,
      Dataset<Row> groups,
      String keyspace,
      String table,
      String[] groupColumns,
      String inColumn,
      StructType schema,
      String consistency,
      int pageSize,
      int maxIn,
      int inFlight) {
    String columns = Stream.of(schema.fields()).map(field -> '"' + field.name() + '"').collect(Collectors.joining(", "));
    String where =
        Stream.concat(Stream.of(groupColumns).map(column -> '"' + column + "\" = ?"), Stream.of('"' + inColumn + "\" IN ?"))
            .collect(Collectors.joining(" AND "));
    String cql = "SELECT " + columns + " FROM " + keyspace + "." + table + " WHERE " + where;
    GroupReader reader =
        new GroupReader(
            CassandraConnector.apply(TokenRangeScan.connectorConf(spark)),
            cql,
            consistency,
            pageSize,
            maxIn,
            inFlight,
            schema.fields());
    return spark.createDataFrame(groups.toJavaRDD().mapPartitions(reader), schema);
  }

  static final class GroupReader implements FlatMapFunction<Iterator<Row>, Row> {
    private static final long serialVersionUID = 1L;
    private final CassandraConnector connector;
    private final String cql;
    private final String consistency;
    private final int pageSize;
    private final int maxIn;
    private final int inFlight;
    private final org.apache.spark.sql.types.DataType[] types;

    GroupReader(
        CassandraConnector connector,
        String cql,
        String consistency,
        int pageSize,
        int maxIn,
        int inFlight,
        StructField[] fields) {
      this.connector = connector;
      this.cql = cql;
      this.consistency = consistency;
      this.pageSize = pageSize;
      this.maxIn = maxIn;
      this.inFlight = inFlight;
      this.types = Stream.of(fields).map(StructField::dataType).toArray(org.apache.spark.sql.types.DataType[]::new);
    }

    @Override
    public Iterator<Row> call(Iterator<Row> groups) {
      CqlSession session = connector.openSession();
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskContext done) -> session.close());
      }
      PreparedStatement prepared = session.prepare(cql);
      Iterator<BoundStatement> statements = statements(prepared, groups);
      return new Iterator<Row>() {
        private final Deque<CompletionStage<AsyncResultSet>> sent = new ArrayDeque<>();
        private Iterator<com.datastax.oss.driver.api.core.cql.Row> rows = Collections.emptyIterator();

        @Override
        public boolean hasNext() {
          while (!rows.hasNext()) {
            while (sent.size() < inFlight && statements.hasNext()) {
              sent.add(session.executeAsync(statements.next()));
            }
            if (sent.isEmpty()) {
              if (task == null) {
                session.close();
              }
              return false;
            }
            AsyncResultSet page = CompletableFutures.getUninterruptibly(sent.poll());
            if (page.hasMorePages()) {
              sent.addFirst(page.fetchNextPage());
            }
            rows = page.currentPage().iterator();
          }
          return true;
        }

        @Override
        public Row next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          return RowFactory.create(TokenRangeScan.sparkValues(rows.next(), types, 0, 0));
        }
      };
    }

    /** One statement per group and chunk of at most maxIn values of the last clustering column. */
    private Iterator<BoundStatement> statements(PreparedStatement prepared, Iterator<Row> groups) {
      List<DataType> variables = new ArrayList<>();
      prepared.getVariableDefinitions().forEach(variable -> variables.add(variable.getType()));
      int leading = variables.size() - 1;
      DataType inType = ((ListType) variables.get(leading)).getElementType();
      return new Iterator<BoundStatement>() {
        private Object[] group;
        private List<Object> values = Collections.emptyList();
        private int next;

        @Override
        public boolean hasNext() {
          while (next >= values.size()) {
            if (!groups.hasNext()) {
              return false;
            }
            Row row = groups.next();
            group = new Object[leading];
            for (int column = 0; column < leading; column++) {
              group[column] = driverValue(row.get(column), variables.get(column));
            }
            values = row.getList(leading);
            next = 0;
          }
          return true;
        }

        @Override
        public BoundStatement next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          List<Object> chunk = new ArrayList<>();
          for (int end = Math.min(next + maxIn, values.size()); next < end; next++) {
            chunk.add(driverValue(values.get(next), inType));
          }
          Object[] bound = new Object[leading + 1];
          System.arraycopy(group, 0, bound, 0, leading);
          bound[leading] = chunk;
          return prepared
              .bind(bound)
              .setConsistencyLevel(DefaultConsistencyLevel.valueOf(consistency))
              .setPageSize(pageSize)
              .setIdempotent(true);
        }
      };
    }
  }

  /** A key value as the connector presents it (uuids as strings), as the Java driver binds it for {@code type}. */
  static Object driverValue(Object value, DataType type) {
    if (value == null) {
      return null;
    }
    if (type.equals(DataTypes.UUID) || type.equals(DataTypes.TIMEUUID)) {
      return UUID.fromString(value.toString());
    }
    if (type.equals(DataTypes.TEXT) || type.equals(DataTypes.ASCII)) {
      return value.toString();
    }
    if (type.equals(DataTypes.BIGINT) || type.equals(DataTypes.COUNTER)) {
      return ((Number) value).longValue();
    }
    if (type.equals(DataTypes.INT)) {
      return ((Number) value).intValue();
    }
    if (type.equals(DataTypes.SMALLINT)) {
      return ((Number) value).shortValue();
    }
    if (type.equals(DataTypes.TINYINT)) {
      return ((Number) value).byteValue();
    }
    if (type.equals(DataTypes.BOOLEAN)) {
      return value;
    }
    if (type.equals(DataTypes.TIMESTAMP)) {
      return ((Timestamp) value).toInstant();
    }
    if (type.equals(DataTypes.DATE)) {
      return ((java.sql.Date) value).toLocalDate();
    }
    if (type.equals(DataTypes.BLOB)) {
      return ByteBuffer.wrap((byte[]) value);
    }
    if (type.equals(DataTypes.INET)) {
      try {
        return InetAddress.getByName(value.toString());
      } catch (UnknownHostException error) {
        throw new IllegalArgumentException("not an address: " + value, error);
      }
    }
    throw new IllegalArgumentException("no key of type " + type.asCql(false, true) + " is read by partition");
  }
}
