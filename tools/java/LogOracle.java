/*
 * kwire's log oracle: Kafka's own FileRecords (kafka-clients) reading segment files.
 *
 * JSON lines on stdin, one answer per line on stdout:
 *   {"op": "scan", "path": P}
 *       -> {"batches": [{position, baseOffset, lastOffset, magic, size, maxTimestamp, timestampType,
 *                        isValid, records, ensureValid}], "error": msg|null, "sizeInBytes": n}
 *          (FileRecords.batches() as FileLogInputStream frames them; ensureValid() per batch;
 *           "records" counts the records of a deep iteration; "error" is an exception of the scan)
 *   {"op": "searchOffset", "path": P, "offset": o, "position": p}
 *       -> {"offset", "position", "size"} of FileRecords.searchForOffsetWithSize, or null
 *   {"op": "searchTimestamp", "path": P, "timestamp": t, "position": p, "startingOffset": s}
 *       -> {"timestamp", "offset"} of FileRecords.searchForTimestamp, or null
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public class LogOracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = MAPPER.readTree(line);
            JsonNode reply;
            try {
                reply = handle(request);
            } catch (Exception e) {
                ObjectNode err = F.objectNode();
                err.put("fatal", e.toString());
                reply = err;
            }
            out.println(MAPPER.writeValueAsString(reply));
        }
    }

    private static JsonNode handle(JsonNode request) throws Exception {
        String op = request.get("op").asText();
        File file = new File(request.get("path").asText());
        try (FileRecords records = FileRecords.open(file, false)) {
            switch (op) {
                case "scan":
                    return scan(records);
                case "searchOffset": {
                    FileRecords.LogOffsetPosition found = records.searchForOffsetWithSize(
                        request.get("offset").asLong(), request.get("position").asInt());
                    if (found == null)
                        return NullNode.getInstance();
                    ObjectNode o = F.objectNode();
                    o.put("offset", found.offset);
                    o.put("position", found.position);
                    o.put("size", found.size);
                    return o;
                }
                case "searchTimestamp": {
                    FileRecords.TimestampAndOffset found = records.searchForTimestamp(
                        request.get("timestamp").asLong(), request.get("position").asInt(),
                        request.get("startingOffset").asLong());
                    if (found == null)
                        return NullNode.getInstance();
                    ObjectNode o = F.objectNode();
                    o.put("timestamp", found.timestamp);
                    o.put("offset", found.offset);
                    return o;
                }
                default:
                    throw new IllegalArgumentException("unknown op " + op);
            }
        }
    }

    private static JsonNode scan(FileRecords records) {
        ObjectNode result = F.objectNode();
        ArrayNode batches = result.putArray("batches");
        result.put("sizeInBytes", records.sizeInBytes());
        result.set("error", NullNode.getInstance());
        try {
            for (FileChannelRecordBatch batch : records.batches()) {
                ObjectNode b = batches.addObject();
                b.put("position", batch.position());
                b.put("baseOffset", batch.baseOffset());
                b.put("lastOffset", batch.lastOffset());
                b.put("magic", batch.magic());
                b.put("size", batch.sizeInBytes());
                b.put("maxTimestamp", batch.maxTimestamp());
                b.put("timestampType", batch.timestampType().id);
                b.put("isValid", batch.isValid());
                try {
                    batch.ensureValid();
                    b.put("ensureValid", true);
                } catch (Exception e) {
                    b.put("ensureValid", false);
                }
                int count = 0;
                for (Record r : batch) {
                    count++;
                }
                b.put("records", count);
            }
        } catch (Exception e) {
            result.put("error", e.toString());
        }
        return result;
    }
}
