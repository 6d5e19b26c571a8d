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
 *   {"op": "dumpLines", "path": P}
 *       -> {"lines": [...]}: the batch and record lines DumpLogSegments.dumpLog prints with
 *          --print-data-log (StringDecoder), rendered from Kafka's own objects with the same
 *          templates as DumpLogSegments.scala (Kafka 3.9) printBatchLevel and the record loop
 *   {"op": "decode", "hex": [h, ...]} -> [new String(bytes, UTF_8), ...] (Kafka's StringDecoder)
 *   {"op": "searchTimestamp", "path": P, "timestamp": t, "position": p, "startingOffset": s}
 *       -> {"timestamp", "offset"} of FileRecords.searchForTimestamp, or null
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.KRaftVersionRecordJsonConverter;
import org.apache.kafka.common.message.SnapshotFooterRecord;
import org.apache.kafka.common.message.SnapshotFooterRecordJsonConverter;
import org.apache.kafka.common.message.SnapshotHeaderRecord;
import org.apache.kafka.common.message.SnapshotHeaderRecordJsonConverter;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.message.VotersRecordJsonConverter;
import org.apache.kafka.common.record.ControlRecordUtils;
import org.apache.kafka.common.record.AbstractLegacyRecordBatch;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.utils.Utils;

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
        if (op.equals("decode")) {
            // new String(bytes, UTF_8): what Kafka's StringDecoder prints (one string per hex input)
            ArrayNode texts = F.arrayNode();
            for (JsonNode hex : request.get("hex")) {
                String h = hex.asText();
                byte[] bytes = new byte[h.length() / 2];
                for (int i = 0; i < bytes.length; i++)
                    bytes[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
                texts.add(new String(bytes, StandardCharsets.UTF_8));
            }
            return texts;
        }
        File file = new File(request.get("path").asText());
        try (FileRecords records = FileRecords.open(file, false)) {
            switch (op) {
                case "scan":
                    return scan(records);
                case "dumpLines":
                    return dumpLines(records);
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

    private static JsonNode dumpLines(FileRecords records) {
        ObjectNode result = F.objectNode();
        ArrayNode lines = result.putArray("lines");
        long validBytes = 0;
        for (FileChannelRecordBatch batch : records.batches()) {
            StringBuilder b = new StringBuilder();
            if (batch.magic() >= 2)
                b.append("baseOffset: " + batch.baseOffset() + " lastOffset: " + batch.lastOffset() + " count: " + batch.countOrNull() +
                    " baseSequence: " + batch.baseSequence() + " lastSequence: " + batch.lastSequence() +
                    " producerId: " + batch.producerId() + " producerEpoch: " + batch.producerEpoch() +
                    " partitionLeaderEpoch: " + batch.partitionLeaderEpoch() + " isTransactional: " + batch.isTransactional() +
                    " isControl: " + batch.isControlBatch() + " deleteHorizonMs: " + batch.deleteHorizonMs());
            else
                b.append("offset: " + batch.lastOffset());
            b.append(" position: " + validBytes + " " + batch.timestampType() + ": " + batch.maxTimestamp() +
                " size: " + batch.sizeInBytes() + " magic: " + batch.magic() +
                " compresscodec: " + batch.compressionType().name + " crc: " + batch.checksum() + " isvalid: " + batch.isValid());
            lines.add(b.toString());
            for (Record record : batch) {
                StringBuilder r = new StringBuilder();
                String prefix = "| ";
                r.append(prefix + "offset: " + record.offset() + " " + batch.timestampType() + ": " + record.timestamp() +
                    " keySize: " + record.keySize() + " valueSize: " + record.valueSize());
                prefix = " ";
                if (batch.magic() >= 2) {
                    StringBuilder keys = new StringBuilder("[");
                    Header[] headers = record.headers();
                    for (int i = 0; i < headers.length; i++) {
                        if (i > 0) keys.append(",");
                        keys.append(headers[i].key());
                    }
                    keys.append("]");
                    r.append(" sequence: " + record.sequence() + " headerKeys: " + keys);
                }
                if (record instanceof AbstractLegacyRecordBatch) {
                    AbstractLegacyRecordBatch legacy = (AbstractLegacyRecordBatch) record;
                    r.append(" isValid: " + legacy.isValid() + " crc: " + legacy.checksum() + "}");
                }
                if (batch.isControlBatch()) {
                    short typeId = ControlRecordType.parseTypeId(record.key());
                    ControlRecordType type = ControlRecordType.fromTypeId(typeId);
                    if (type == ControlRecordType.ABORT || type == ControlRecordType.COMMIT) {
                        EndTransactionMarker marker = EndTransactionMarker.deserialize(record);
                        r.append(" endTxnMarker: " + marker.controlType() + " coordinatorEpoch: " + marker.coordinatorEpoch());
                    } else if (type == ControlRecordType.SNAPSHOT_HEADER) {
                        SnapshotHeaderRecord header = ControlRecordUtils.deserializeSnapshotHeaderRecord(record);
                        r.append(" SnapshotHeader " + SnapshotHeaderRecordJsonConverter.write(header, header.version()));
                    } else if (type == ControlRecordType.SNAPSHOT_FOOTER) {
                        SnapshotFooterRecord footer = ControlRecordUtils.deserializeSnapshotFooterRecord(record);
                        r.append(" SnapshotFooter " + SnapshotFooterRecordJsonConverter.write(footer, footer.version()));
                    } else if (type == ControlRecordType.KRAFT_VERSION) {
                        KRaftVersionRecord kraftVersion = ControlRecordUtils.deserializeKRaftVersionRecord(record);
                        r.append(" KRaftVersion " + KRaftVersionRecordJsonConverter.write(kraftVersion, kraftVersion.version()));
                    } else if (type == ControlRecordType.KRAFT_VOTERS) {
                        VotersRecord voters = ControlRecordUtils.deserializeVotersRecord(record);
                        r.append(" KRaftVoters " + VotersRecordJsonConverter.write(voters, voters.version()));
                    } else {
                        r.append(" controlType: " + type + "(" + typeId + ")");
                    }
                } else {
                    if (record.hasKey()) {
                        r.append(prefix + "key: " + new String(Utils.readBytes(record.key()), StandardCharsets.UTF_8));
                        prefix = " ";
                    }
                    if (record.hasValue())
                        r.append(" payload: " + new String(Utils.readBytes(record.value()), StandardCharsets.UTF_8));
                }
                lines.add(r.toString());
            }
            validBytes += batch.sizeInBytes();
        }
        return result;
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
