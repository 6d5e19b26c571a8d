/*
 * kwire's records oracle: Apache Kafka's own record code behind a JSON-lines server.
 *
 * Reads one JSON request per line on stdin, answers one JSON line on stdout (a JSON array of
 * requests gets an array of answers). Bytes travel as lowercase hex strings.
 *
 *   {"op":"build", "magic":2, "codec":"gzip", "timestamp_type":0|1, "base_offset":0,
 *    "log_append_time":-1, "producer_id":-1, "producer_epoch":-1, "base_sequence":-1,
 *    "transactional":false, "partition_leader_epoch":-1, "delete_horizon_ms":-1,
 *    "records":[{"offset":0, "timestamp":1, "key":hex|null, "value":hex|null,
 *                "headers":[[key, hex|null], ...]}]}
 *       -> {"bytes": hex}   (MemoryRecordsBuilder.appendWithOffset for every record)
 *   {"op":"end_txn", "commit":true, "offset":0, "timestamp":1, "partition_leader_epoch":0,
 *    "producer_id":1, "producer_epoch":0, "coordinator_epoch":5}
 *       -> {"bytes": hex}   (MemoryRecords.withEndTransactionMarker)
 *   {"op":"leader_change", "offset":0, "timestamp":1, "leader_epoch":3, "leader_id":7,
 *    "voters":[1,2,3]}
 *       -> {"bytes": hex, "value": hex}   (MemoryRecords.withLeaderChangeMessage)
 *   {"op":"read", "bytes": hex, "iterator": false}
 *       -> {"batches":[{header fields..., "valid":true|false, "error":..., "records":[...]}]}
 *          (MemoryRecords.readableRecords(...).batches(), ensureValid(), then every record
 *          through streamingIterator(), or through iterator() with "iterator": true)
 *
 * Errors come back as {"error": "<exception class>: <message>"}; the server keeps running.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.CloseableIterator;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public class RecordsOracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            JsonNode req = MAPPER.readTree(line);
            JsonNode reply;
            if (req.isArray()) {
                ArrayNode all = F.arrayNode();
                for (JsonNode r : req) all.add(handle(r));
                reply = all;
            } else {
                reply = handle(req);
            }
            out.println(MAPPER.writeValueAsString(reply));
            out.flush();
        }
    }

    private static JsonNode handle(JsonNode req) {
        try {
            switch (req.get("op").asText()) {
                case "build": return build(req);
                case "end_txn": return endTxn(req);
                case "leader_change": return leaderChange(req);
                case "read": return read(req);
                default: return error("unknown op " + req.get("op"));
            }
        } catch (Throwable t) {
            return error(t.getClass().getName() + ": " + t.getMessage());
        }
    }

    private static ObjectNode error(String message) {
        ObjectNode o = F.objectNode();
        o.put("error", message);
        return o;
    }

    // -- hex ------------------------------------------------------------------------------------

    private static byte[] unhex(JsonNode node) {
        if (node == null || node.isNull()) return null;
        String s = node.asText();
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    private static String hex(ByteBuffer buf) {
        if (buf == null) return null;
        ByteBuffer d = buf.duplicate();
        StringBuilder sb = new StringBuilder(d.remaining() * 2);
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get() & 0xff));
        return sb.toString();
    }

    private static String hex(byte[] b) {
        return b == null ? null : hex(ByteBuffer.wrap(b));
    }

    private static long getLong(JsonNode req, String name, long dflt) {
        JsonNode n = req.get(name);
        return n == null || n.isNull() ? dflt : n.asLong();
    }

    // -- ops ------------------------------------------------------------------------------------

    private static JsonNode build(JsonNode req) {
        byte magic = (byte) req.get("magic").asInt();
        CompressionType type = CompressionType.forName(req.path("codec").asText("none"));
        Compression compression = Compression.of(type).build();
        TimestampType tsType = req.path("timestamp_type").asInt(0) == 1
                ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        if (magic == 0) tsType = TimestampType.NO_TIMESTAMP_TYPE;
        long baseOffset = getLong(req, "base_offset", 0);
        long logAppendTime = getLong(req, "log_append_time", RecordBatch.NO_TIMESTAMP);
        long producerId = getLong(req, "producer_id", RecordBatch.NO_PRODUCER_ID);
        short producerEpoch = (short) getLong(req, "producer_epoch", RecordBatch.NO_PRODUCER_EPOCH);
        int baseSequence = (int) getLong(req, "base_sequence", RecordBatch.NO_SEQUENCE);
        boolean transactional = req.path("transactional").asBoolean(false);
        int leaderEpoch = (int) getLong(req, "partition_leader_epoch", RecordBatch.NO_PARTITION_LEADER_EPOCH);
        long deleteHorizon = getLong(req, "delete_horizon_ms", RecordBatch.NO_TIMESTAMP);
        ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        MemoryRecordsBuilder builder = new MemoryRecordsBuilder(
                new org.apache.kafka.common.utils.ByteBufferOutputStream(buffer), magic, compression, tsType,
                baseOffset, logAppendTime, producerId, producerEpoch, baseSequence, transactional, false,
                leaderEpoch, Integer.MAX_VALUE, deleteHorizon);
        for (JsonNode r : req.get("records")) {
            List<Header> headers = new ArrayList<>();
            for (JsonNode h : r.path("headers")) headers.add(new RecordHeader(h.get(0).asText(), unhex(h.get(1))));
            builder.appendWithOffset(r.get("offset").asLong(), r.get("timestamp").asLong(),
                    unhex(r.get("key")), unhex(r.get("value")), headers.toArray(new Header[0]));
        }
        MemoryRecords records = builder.build();
        ObjectNode o = F.objectNode();
        o.put("bytes", hex(records.buffer()));
        return o;
    }

    private static JsonNode endTxn(JsonNode req) {
        ControlRecordType type = req.get("commit").asBoolean() ? ControlRecordType.COMMIT : ControlRecordType.ABORT;
        EndTransactionMarker marker = new EndTransactionMarker(type, req.get("coordinator_epoch").asInt());
        MemoryRecords records = MemoryRecords.withEndTransactionMarker(
                req.get("offset").asLong(), req.get("timestamp").asLong(), req.get("partition_leader_epoch").asInt(),
                req.get("producer_id").asLong(), (short) req.get("producer_epoch").asInt(), marker);
        ObjectNode o = F.objectNode();
        o.put("bytes", hex(records.buffer()));
        return o;
    }

    private static JsonNode leaderChange(JsonNode req) {
        LeaderChangeMessage msg = new LeaderChangeMessage().setLeaderId(req.get("leader_id").asInt());
        List<LeaderChangeMessage.Voter> voters = new ArrayList<>();
        for (JsonNode v : req.path("voters")) voters.add(new LeaderChangeMessage.Voter().setVoterId(v.asInt()));
        msg.setVoters(voters).setGrantingVoters(voters);
        MemoryRecords records = MemoryRecords.withLeaderChangeMessage(
                req.get("offset").asLong(), req.get("timestamp").asLong(), req.get("leader_epoch").asInt(),
                ByteBuffer.allocate(256), msg);
        ObjectNode o = F.objectNode();
        o.put("bytes", hex(records.buffer()));
        return o;
    }

    private static JsonNode read(JsonNode req) {
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(unhex(req.get("bytes"))));
        ArrayNode batches = F.arrayNode();
        for (MutableRecordBatch batch : records.batches()) {
            ObjectNode b = F.objectNode();
            b.put("magic", batch.magic());
            b.put("base_offset", batch.baseOffset());
            b.put("last_offset", batch.lastOffset());
            b.put("size", batch.sizeInBytes());
            b.put("compression", batch.compressionType().name);
            b.put("timestamp_type", batch.timestampType().id);
            b.put("max_timestamp", batch.maxTimestamp());
            b.put("is_transactional", batch.isTransactional());
            b.put("is_control", batch.isControlBatch());
            b.put("producer_id", batch.producerId());
            b.put("producer_epoch", batch.producerEpoch());
            b.put("base_sequence", batch.baseSequence());
            b.put("partition_leader_epoch", batch.partitionLeaderEpoch());
            b.put("crc", batch.checksum());
            b.put("has_delete_horizon", batch.deleteHorizonMs().isPresent());
            Integer count = batch.countOrNull();
            if (count != null) b.put("count", count);
            try {
                batch.ensureValid();
                b.put("valid", true);
            } catch (Throwable t) {
                b.put("valid", false);
                b.put("error", t.getClass().getName() + ": " + t.getMessage());
                batches.add(b);
                continue;
            }
            ArrayNode recs = F.arrayNode();
            boolean plainIterator = req.path("iterator").asBoolean(false);
            try (CloseableIterator<Record> it = plainIterator
                    ? CloseableIterator.wrap(batch.iterator())
                    : batch.streamingIterator(org.apache.kafka.common.utils.BufferSupplier.NO_CACHING)) {
                while (it.hasNext()) {
                    Record r = it.next();
                    ObjectNode rec = F.objectNode();
                    rec.put("offset", r.offset());
                    rec.put("timestamp", r.timestamp());
                    rec.put("sequence", r.sequence());
                    rec.put("key", r.hasKey() ? hex(r.key()) : null);
                    rec.put("value", r.hasValue() ? hex(r.value()) : null);
                    ArrayNode hs = F.arrayNode();
                    for (Header h : r.headers()) {
                        ArrayNode pair = F.arrayNode();
                        pair.add(h.key());
                        pair.add(hex(h.value()));
                        hs.add(pair);
                    }
                    rec.set("headers", hs);
                    if (batch.isControlBatch()) {
                        ControlRecordType ct = ControlRecordType.parse(r.key());
                        rec.put("control_type", ct.name());
                        if (ct == ControlRecordType.ABORT || ct == ControlRecordType.COMMIT) {
                            rec.put("coordinator_epoch", EndTransactionMarker.deserialize(r).coordinatorEpoch());
                        }
                    }
                    recs.add(rec);
                }
            } catch (Throwable t) {
                b.put("records_error", t.getClass().getName() + ": " + t.getMessage());
            }
            b.set("records", recs);
            batches.add(b);
        }
        ObjectNode o = F.objectNode();
        o.set("batches", batches);
        return o;
    }
}
