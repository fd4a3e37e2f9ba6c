package org.james.consistency;

import com.datastax.oss.driver.internal.core.metadata.token.Murmur3Token;
import com.datastax.oss.driver.internal.core.metadata.token.Murmur3TokenFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.UUID;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;

/**
 * The Murmur3 token Cassandra gives a partition key, from the key's columns as the connector presents them (uuids as
 * strings), hashed by the Java driver's own token factory: a Spark SQL function over a struct of the key's columns,
 * in key order. Null when a component is null.
 */
public final class PartitionToken implements UDF1<Row, Long> {
  private static final long serialVersionUID = 1L;

  /** The partition key types this function serializes (every James table's partition key is one of them). */
  private static final Set<String> KEY_TYPES =
      Set.of("uuid", "timeuuid", "text", "varchar", "ascii", "bigint", "counter", "int");

  private final String[] cqlTypes;

  public PartitionToken(String[] cqlTypes) {
    this.cqlTypes = cqlTypes.clone();
  }

  /** Registers the function under {@code name} for partition keys of these CQL types. */
  public static void register(SparkSession spark, String name, String[] cqlTypes) {
    spark.udf().register(name, new PartitionToken(cqlTypes), DataTypes.LongType);
  }

  /** The types among {@code cqlTypes} it cannot hash (checked before a job uses it). */
  public static String[] unsupported(String[] cqlTypes) {
    return Arrays.stream(cqlTypes).filter(type -> !KEY_TYPES.contains(type)).distinct().sorted().toArray(String[]::new);
  }

  @Override
  public Long call(Row key) {
    ByteBuffer[] parts = new ByteBuffer[cqlTypes.length];
    for (int i = 0; i < cqlTypes.length; i++) {
      if (key.isNullAt(i)) {
        return null;
      }
      parts[i] = serialized(cqlTypes[i], key.get(i));
    }
    ByteBuffer whole = parts.length == 1 ? parts[0] : composite(parts);
    return ((Murmur3Token) new Murmur3TokenFactory().hash(whole)).getValue();
  }

  private static ByteBuffer serialized(String cqlType, Object value) {
    switch (cqlType) {
      case "uuid":
      case "timeuuid":
        UUID uuid = UUID.fromString(value.toString());
        return (ByteBuffer)
            ByteBuffer.allocate(16)
                .putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits())
                .flip();
      case "text":
      case "varchar":
      case "ascii":
        return ByteBuffer.wrap(value.toString().getBytes(StandardCharsets.UTF_8));
      case "bigint":
      case "counter":
        return (ByteBuffer) ByteBuffer.allocate(8).putLong(((Number) value).longValue()).flip();
      case "int":
        return (ByteBuffer) ByteBuffer.allocate(4).putInt(((Number) value).intValue()).flip();
      default:
        throw new IllegalArgumentException("no token for a partition key of type " + cqlType);
    }
  }

  /** A composite partition key as Cassandra serializes it: each part as (length, bytes, 0). */
  private static ByteBuffer composite(ByteBuffer[] parts) {
    int size = 0;
    for (ByteBuffer part : parts) {
      size += 2 + part.remaining() + 1;
    }
    ByteBuffer whole = ByteBuffer.allocate(size);
    for (ByteBuffer part : parts) {
      whole.putShort((short) part.remaining()).put(part.duplicate()).put((byte) 0);
    }
    return (ByteBuffer) whole.flip();
  }
}
