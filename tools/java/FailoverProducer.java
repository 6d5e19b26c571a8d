/*
 * kwire's failover producer: Kafka's Java producer (kafka-clients 3.9.1), idempotent with
 * acks=all, sending at a steady rate while the test moves leaders and stops and starts brokers of
 * an in-process kwire cluster. Used by tests/interop/test_failover.py.
 *
 *   <bootstrap> <topic> <count> <partitions> <interval-ms>
 *       Sends records 0..count-1, record i to partition i % partitions with key "k-<i>" and value
 *       "v-<i>", one every interval-ms, then flushes. Prints "sent <i>" to stderr every 100 records.
 *       -> {"acks": [{"index", "partition", "offset"} | {"index", "error"}], "error": null}
 *          (ONE JSON line, the last on stdout)
 */

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

public class FailoverProducer {
    public static void main(String[] args) throws Exception {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode reply = f.objectNode();
        try {
            String bootstrap = args[0];
            String topic = args[1];
            int count = Integer.parseInt(args[2]);
            int partitions = Integer.parseInt(args[3]);
            long intervalMs = Long.parseLong(args[4]);
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "90000");
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
            props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "3000");
            props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
            props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
            props.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
            ArrayNode acks = reply.putArray("acks");
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    byte[] key = ("k-" + i).getBytes(StandardCharsets.UTF_8);
                    byte[] value = ("v-" + i).getBytes(StandardCharsets.UTF_8);
                    futures.add(producer.send(new ProducerRecord<>(topic, i % partitions, key, value)));
                    if (i % 100 == 0) {
                        System.err.println("sent " + i);
                    }
                    Thread.sleep(intervalMs);
                }
                producer.flush();
                for (int i = 0; i < count; i++) {
                    ObjectNode ack = acks.addObject();
                    ack.put("index", i);
                    try {
                        RecordMetadata md = futures.get(i).get(60, TimeUnit.SECONDS);
                        ack.put("partition", md.partition());
                        ack.put("offset", md.hasOffset() ? md.offset() : -1);
                    } catch (Exception e) {
                        Throwable cause = e.getCause() != null ? e.getCause() : e;
                        ack.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
                    }
                }
            }
            reply.putNull("error");
        } catch (Exception e) {
            reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        System.out.println(reply.toString());
    }
}
