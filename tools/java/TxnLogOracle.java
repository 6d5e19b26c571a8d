/*
 * kwire's transaction-log oracle: TransactionLogValue v0 and v1 written and read by Kafka's own
 * protocol types (kafka-clients 3.9.1's Schema, Struct, ArrayOf/CompactArrayOf, TaggedFields).
 *
 * The schemas are the ones Kafka's message generator emits for TransactionLogValue.json as its
 * SCHEMA_0 and SCHEMA_1 (v0: Kafka 3.9's record; v1: flexible, with the tagged PreviousProducerId
 * tag 0, NextProducerId tag 1 and ClientTransactionVersion tag 2 of Kafka 4.x); the generated class
 * itself lives in Kafka's transaction-coordinator module, not in kafka-clients.
 *
 * JSON lines on stdin, one answer per line on stdout:
 *   {"op": "encode", "version": v, "value": {producerId, producerEpoch, timeoutMs, status,
 *        partitions: null | [{topic, ids: [...]}], lastUpdateMs, startMs, previousProducerId,
 *        nextProducerId, clientTransactionVersion}}
 *       -> {"hex": "<int16 version><value>"} (the tags written only when not at their default)
 *   {"op": "decode", "hex": h} -> {"version": v, "value": {...}} or {"error": msg}
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.protocol.types.Type;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

public class TxnLogOracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final String TAGS = "_tagged_fields";

    static final Schema PARTITIONS_0 = new Schema(
        new Field("topic", Type.STRING, ""),
        new Field("partition_ids", new ArrayOf(Type.INT32), ""));
    static final Schema SCHEMA_0 = new Schema(
        new Field("producer_id", Type.INT64, ""),
        new Field("producer_epoch", Type.INT16, ""),
        new Field("transaction_timeout_ms", Type.INT32, ""),
        new Field("transaction_status", Type.INT8, ""),
        new Field("transaction_partitions", ArrayOf.nullable(PARTITIONS_0), ""),
        new Field("transaction_last_update_timestamp_ms", Type.INT64, ""),
        new Field("transaction_start_timestamp_ms", Type.INT64, ""));
    static final Schema PARTITIONS_1 = new Schema(
        new Field("topic", Type.COMPACT_STRING, ""),
        new Field("partition_ids", new CompactArrayOf(Type.INT32), ""),
        Field.TaggedFieldsSection.of());
    static final Schema SCHEMA_1 = new Schema(
        new Field("producer_id", Type.INT64, ""),
        new Field("producer_epoch", Type.INT16, ""),
        new Field("transaction_timeout_ms", Type.INT32, ""),
        new Field("transaction_status", Type.INT8, ""),
        new Field("transaction_partitions", CompactArrayOf.nullable(PARTITIONS_1), ""),
        new Field("transaction_last_update_timestamp_ms", Type.INT64, ""),
        new Field("transaction_start_timestamp_ms", Type.INT64, ""),
        Field.TaggedFieldsSection.of(
            0, new Field("previous_producer_id", Type.INT64, ""),
            1, new Field("next_producer_id", Type.INT64, ""),
            2, new Field("client_transaction_version", Type.INT16, "")));

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = MAPPER.readTree(line);
            ObjectNode answer = F.objectNode();
            try {
                String op = request.get("op").asText();
                if (op.equals("encode")) {
                    answer.put("hex", encode(request.get("version").asInt(), request.get("value")));
                } else if (op.equals("decode")) {
                    decode(request.get("hex").asText(), answer);
                } else {
                    answer.put("error", "unknown op " + op);
                }
            } catch (Exception e) {
                answer.put("error", e.toString());
            }
            out.println(MAPPER.writeValueAsString(answer));
        }
    }

    static String encode(int version, JsonNode v) {
        Schema schema = version == 0 ? SCHEMA_0 : SCHEMA_1;
        Schema partitionSchema = version == 0 ? PARTITIONS_0 : PARTITIONS_1;
        Struct struct = new Struct(schema);
        struct.set("producer_id", v.get("producerId").asLong());
        struct.set("producer_epoch", (short) v.get("producerEpoch").asInt());
        struct.set("transaction_timeout_ms", v.get("timeoutMs").asInt());
        struct.set("transaction_status", (byte) v.get("status").asInt());
        JsonNode partitions = v.get("partitions");
        if (partitions == null || partitions.isNull()) {
            struct.set("transaction_partitions", null);
        } else {
            Object[] entries = new Object[partitions.size()];
            for (int i = 0; i < entries.length; i++) {
                JsonNode p = partitions.get(i);
                Struct entry = new Struct(partitionSchema);
                entry.set("topic", p.get("topic").asText());
                Object[] ids = new Object[p.get("ids").size()];
                for (int j = 0; j < ids.length; j++) ids[j] = p.get("ids").get(j).asInt();
                entry.set("partition_ids", ids);
                if (version >= 1) entry.set(TAGS, new TreeMap<Integer, Object>());
                entries[i] = entry;
            }
            struct.set("transaction_partitions", entries);
        }
        struct.set("transaction_last_update_timestamp_ms", v.get("lastUpdateMs").asLong());
        struct.set("transaction_start_timestamp_ms", v.get("startMs").asLong());
        if (version >= 1) {
            // the generated writer leaves a tagged field out at its default
            NavigableMap<Integer, Object> tags = new TreeMap<>();
            long previous = v.get("previousProducerId").asLong();
            long next = v.get("nextProducerId").asLong();
            short client = (short) v.get("clientTransactionVersion").asInt();
            if (previous != -1L) tags.put(0, previous);
            if (next != -1L) tags.put(1, next);
            if (client != 0) tags.put(2, client);
            struct.set(TAGS, tags);
        }
        ByteBuffer buffer = ByteBuffer.allocate(2 + struct.sizeOf());
        buffer.putShort((short) version);
        struct.writeTo(buffer);
        return hex(buffer.array());
    }

    static void decode(String hex, ObjectNode answer) {
        ByteBuffer buffer = ByteBuffer.wrap(unhex(hex));
        short version = buffer.getShort();
        Struct struct = (version == 0 ? SCHEMA_0 : SCHEMA_1).read(buffer);
        if (buffer.hasRemaining()) throw new IllegalStateException(buffer.remaining() + " bytes left");
        ObjectNode v = answer.putObject("value");
        answer.put("version", version);
        v.put("producerId", struct.getLong("producer_id"));
        v.put("producerEpoch", struct.getShort("producer_epoch"));
        v.put("timeoutMs", struct.getInt("transaction_timeout_ms"));
        v.put("status", struct.getByte("transaction_status"));
        Object[] partitions = struct.getArray("transaction_partitions");
        if (partitions == null) {
            v.putNull("partitions");
        } else {
            ArrayNode list = v.putArray("partitions");
            for (Object o : partitions) {
                Struct p = (Struct) o;
                ObjectNode entry = list.addObject();
                entry.put("topic", p.getString("topic"));
                ArrayNode ids = entry.putArray("ids");
                for (Object id : p.getArray("partition_ids")) ids.add((Integer) id);
            }
        }
        v.put("lastUpdateMs", struct.getLong("transaction_last_update_timestamp_ms"));
        v.put("startMs", struct.getLong("transaction_start_timestamp_ms"));
        long previous = -1L, next = -1L;
        int client = 0;
        if (version >= 1) {
            @SuppressWarnings("unchecked")
            Map<Integer, Object> tags = (Map<Integer, Object>) struct.get(TAGS);
            if (tags.containsKey(0)) previous = (Long) tags.get(0);
            if (tags.containsKey(1)) next = (Long) tags.get(1);
            if (tags.containsKey(2)) client = (Short) tags.get(2);
        }
        v.put("previousProducerId", previous);
        v.put("nextProducerId", next);
        v.put("clientTransactionVersion", client);
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) sb.append(String.format("%02x", b & 0xff));
        return sb.toString();
    }

    static byte[] unhex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return out;
    }
}
