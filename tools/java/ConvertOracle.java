/*
 * ConvertOracle: Apache Kafka's own record classes (kafka-clients 3.9.1), driven from Python, as the
 * ground truth for kwire's broker append path (kwire.records.validate_and_assign) and its format
 * conversion (kwire.records.convert).
 *
 *   java ConvertOracle
 *       A long-lived JSON-lines server on stdin/stdout: one request object per input line, one reply
 *       object per output line. Binary values travel as base64 strings (null stays null). Requests:
 *
 *         {"op": "read", "bytes": B}
 *             MemoryRecords.readableRecords(B): every batch must pass ensureValid(); reply
 *             {"batches": [{header fields..., "records": [{offset, timestamp, key, value,
 *             headers: [[key, value]], sequence}]}], "validBytes": n}.
 *         {"op": "downconvert", "bytes": B, "toMagic": m, "firstOffset": o}
 *             MemoryRecords.downConvert(m, o, time) (RecordsUtil.downConvert, the broker's fetch path).
 *             Reply {"bytes": B', "recordsConverted": n}.
 *         {"op": "build", "magic": m, "compression": id, "timestampType": 0|1, "baseOffset": o,
 *          "logAppendTime": t, "producerId": p, "producerEpoch": e, "baseSequence": s,
 *          "transactional": bool, "partitionLeaderEpoch": l,
 *          "records": [{offset, timestamp, key, value, headers}]}
 *             MemoryRecords.builder(...) then appendWithOffset for each record (what LogValidator's
 *             rebuild path does). Reply {"bytes": B, "maxTimestamp": t, "shallowOffsetOfMaxTimestamp": o}
 *             from MemoryRecordsBuilder.info().
 *         {"op": "patch", "bytes": B, "batches": [{"lastOffset": o?, "partitionLeaderEpoch": l?,
 *          "maxTimestamp": {"type": 0|1, "value": t}?}, ...]}
 *             The in-place mutations LogValidator applies to a producer's batches, through Kafka's
 *             MutableRecordBatch (setLastOffset, setPartitionLeaderEpoch, setMaxTimestamp, in that
 *             order), the i-th entry to the i-th batch. Reply {"bytes": B'}.
 *
 *       A request that fails gets {"error": "<exception class>: <message>"}; the server keeps going.
 *       End of input stops it.
 *
 * Compiled and started by tools/kafka_jars.py: compile_java("ConvertOracle") and
 * java_command("ConvertOracle", classes_dir).
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.ConvertedRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Time;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

public final class ConvertOracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode reply;
            try {
                reply = handle(MAPPER.readTree(line));
            } catch (Throwable t) {
                reply = NODES.objectNode();
                reply.put("error", t.getClass().getName() + ": " + t.getMessage());
            }
            out.println(MAPPER.writeValueAsString(reply));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode req) {
        String op = req.get("op").asText();
        switch (op) {
            case "read":
                return read(bytes(req.get("bytes")));
            case "downconvert":
                return downConvert(req);
            case "build":
                return build(req);
            case "patch":
                return patch(req);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static ByteBuffer bytes(JsonNode node) {
        return ByteBuffer.wrap(Base64.getDecoder().decode(node.asText()));
    }

    private static byte[] nullableBytes(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        return Base64.getDecoder().decode(node.asText());
    }

    private static String b64(ByteBuffer buf) {
        if (buf == null) {
            return null;
        }
        ByteBuffer dup = buf.duplicate();
        byte[] raw = new byte[dup.remaining()];
        dup.get(raw);
        return Base64.getEncoder().encodeToString(raw);
    }

    private static String b64(byte[] raw) {
        return raw == null ? null : Base64.getEncoder().encodeToString(raw);
    }

    private static ObjectNode read(ByteBuffer buffer) {
        MemoryRecords records = MemoryRecords.readableRecords(buffer);
        ObjectNode reply = NODES.objectNode();
        ArrayNode batches = reply.putArray("batches");
        for (RecordBatch batch : records.batches()) {
            batch.ensureValid();
            ObjectNode b = batches.addObject();
            b.put("magic", batch.magic());
            b.put("baseOffset", batch.baseOffset());
            b.put("lastOffset", batch.lastOffset());
            b.put("checksum", batch.checksum());
            b.put("compression", batch.compressionType().id);
            b.put("timestampType", batch.timestampType().id);
            b.put("maxTimestamp", batch.maxTimestamp());
            b.put("producerId", batch.producerId());
            b.put("producerEpoch", batch.producerEpoch());
            b.put("baseSequence", batch.baseSequence());
            b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            b.put("transactional", batch.isTransactional());
            b.put("control", batch.isControlBatch());
            b.put("sizeInBytes", batch.sizeInBytes());
            Integer count = batch.countOrNull();
            if (count == null) {
                b.putNull("count");
            } else {
                b.put("count", count);
            }
            ArrayNode recs = b.putArray("records");
            for (Record record : batch) {
                record.ensureValid();
                ObjectNode r = recs.addObject();
                r.put("offset", record.offset());
                r.put("timestamp", record.timestamp());
                r.put("key", b64(record.key()));
                r.put("value", b64(record.value()));
                r.put("sequence", record.sequence());
                ArrayNode hs = r.putArray("headers");
                for (Header h : record.headers()) {
                    ArrayNode pair = hs.addArray();
                    pair.add(h.key());
                    pair.add(b64(h.value()));
                }
            }
        }
        reply.put("validBytes", records.validBytes());
        return reply;
    }

    private static ObjectNode downConvert(JsonNode req) {
        MemoryRecords records = MemoryRecords.readableRecords(bytes(req.get("bytes")));
        byte toMagic = (byte) req.get("toMagic").asInt();
        long firstOffset = req.get("firstOffset").asLong();
        ConvertedRecords<MemoryRecords> converted = records.downConvert(toMagic, firstOffset, Time.SYSTEM);
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", b64(converted.records().buffer()));
        reply.put("recordsConverted", converted.recordConversionStats().numRecordsConverted());
        return reply;
    }

    private static ObjectNode build(JsonNode req) {
        byte magic = (byte) req.get("magic").asInt();
        CompressionType type = CompressionType.forId(req.get("compression").asInt());
        TimestampType tsType = req.get("timestampType").asInt() == 1
            ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        ByteBuffer buffer = ByteBuffer.allocate(1024);
        MemoryRecordsBuilder builder = MemoryRecords.builder(
            buffer,
            magic,
            Compression.of(type).build(),
            tsType,
            req.get("baseOffset").asLong(),
            req.get("logAppendTime").asLong(),
            req.get("producerId").asLong(),
            (short) req.get("producerEpoch").asInt(),
            req.get("baseSequence").asInt(),
            req.get("transactional").asBoolean(),
            req.get("partitionLeaderEpoch").asInt());
        for (JsonNode r : req.get("records")) {
            JsonNode hs = r.get("headers");
            Header[] headers = new Header[hs == null ? 0 : hs.size()];
            for (int i = 0; i < headers.length; i++) {
                headers[i] = new RecordHeader(hs.get(i).get(0).asText(), nullableBytes(hs.get(i).get(1)));
            }
            builder.appendWithOffset(
                r.get("offset").asLong(),
                r.get("timestamp").asLong(),
                nullableBytes(r.get("key")),
                nullableBytes(r.get("value")),
                headers);
        }
        MemoryRecords built = builder.build();
        MemoryRecordsBuilder.RecordsInfo info = builder.info();
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", b64(built.buffer()));
        reply.put("maxTimestamp", info.maxTimestamp);
        reply.put("shallowOffsetOfMaxTimestamp", info.shallowOffsetOfMaxTimestamp);
        return reply;
    }

    private static ObjectNode patch(JsonNode req) {
        ByteBuffer buffer = bytes(req.get("bytes"));
        MemoryRecords records = MemoryRecords.readableRecords(buffer);
        JsonNode ops = req.get("batches");
        int i = 0;
        for (MutableRecordBatch batch : records.batches()) {
            JsonNode op = ops.get(i++);
            if (op == null) {
                break;
            }
            if (op.hasNonNull("lastOffset")) {
                batch.setLastOffset(op.get("lastOffset").asLong());
            }
            if (op.hasNonNull("partitionLeaderEpoch")) {
                batch.setPartitionLeaderEpoch(op.get("partitionLeaderEpoch").asInt());
            }
            JsonNode ts = op.get("maxTimestamp");
            if (ts != null && !ts.isNull()) {
                TimestampType type = ts.get("type").asInt() == 1
                    ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
                batch.setMaxTimestamp(type, ts.get("value").asLong());
            }
        }
        ObjectNode reply = NODES.objectNode();
        reply.put("bytes", b64(buffer));
        return reply;
    }
}
