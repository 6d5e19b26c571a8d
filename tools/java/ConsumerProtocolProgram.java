/*
 * kwire's interop check of KIP-848: Kafka's Java consumer (kafka-clients 3.9.1) with
 * group.protocol=consumer (ConsumerGroupHeartbeat; the AsyncKafkaConsumer) against a broker.
 * The answer is ONE JSON line on stdout (the last line); chatter goes to stderr.
 * Used by tests/interop/test_consumer_protocol.py.
 *   <bootstrap> <topic> <group> <expected-count> <timeout-ms>
 *       subscribe([topic]) in <group>, auto.offset.reset=earliest, no auto commit; poll until
 *       expected-count records or the deadline; commitSync; read the committed offsets; close
 *       (the member leaves with epoch -1).
 *       -> {"count", "values": [...], "assignment": [partition...], "committed": {partition: offset},
 *           "error": null}
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class ConsumerProtocolProgram {
    private ConsumerProtocolProgram() {}

    private static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    public static void main(String[] args) {
        try {
            System.out.println(run(args));
        } catch (Throwable t) {
            Throwable cause = t.getCause() != null ? t.getCause() : t;
            System.out.println("{\"error\": " + quote(cause.getClass().getSimpleName() + ": " + cause.getMessage()) + "}");
        }
    }

    private static String run(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int expected = Integer.parseInt(args[3]);
        long timeoutMs = Long.parseLong(args[4]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        Set<Integer> assignment = new HashSet<>();
        Map<Integer, Long> committed = new TreeMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (values.size() < expected && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    values.add(r.value());
                }
            }
            // a few more polls: nothing beyond the expected records may come
            for (int i = 0; i < 3; i++) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    values.add(r.value());
                }
            }
            for (TopicPartition tp : consumer.assignment()) {
                assignment.add(tp.partition());
            }
            consumer.commitSync(Duration.ofSeconds(30));
            Map<TopicPartition, OffsetAndMetadata> found =
                consumer.committed(consumer.assignment(), Duration.ofSeconds(30));
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : found.entrySet()) {
                if (e.getValue() != null) {
                    committed.put(e.getKey().partition(), e.getValue().offset());
                }
            }
        }
        StringBuilder out = new StringBuilder("{\"count\": ").append(values.size()).append(", \"values\": [");
        for (int i = 0; i < values.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(values.get(i)));
        }
        out.append("], \"assignment\": [");
        int i = 0;
        for (int p : assignment) {
            out.append(i++ == 0 ? "" : ", ").append(p);
        }
        out.append("], \"committed\": {");
        i = 0;
        for (Map.Entry<Integer, Long> e : committed.entrySet()) {
            out.append(i++ == 0 ? "" : ", ").append("\"").append(e.getKey()).append("\": ").append(e.getValue());
        }
        return out.append("}, \"error\": null}").toString();
    }
}
