/*
 * kwire's interop client: Kafka's own Java clients (kafka-clients 3.9.1) against a broker.
 *
 * One command per run; the answer is ONE JSON line on stdout (the last line; slf4j's "no provider"
 * notice and any other chatter go to stderr). Used by tests/interop/test_java_clients.py.
 *
 *   produce <bootstrap> <topic> <compression> <count> [option ...]
 *       Sends records 0..count-1 as tests/interop/interop_helpers.py's expected_record(i) describes:
 *         key     "k-<i>", or null when i % 4 == 0
 *         value   "v-<i>-" + "x" * (i % 7), or null (a tombstone) when i % 4 == 1
 *         headers i % 4 == 2: [("h1", "a-<i>"), ("h2", null)]; i % 4 == 3: [("h1", "")]; else none
 *         timestamp 1700000000000 + i, partition 0
 *       Options: "idempotent" (enable.idempotence=true, acks=all), "transactional" (a
 *       transactional.id; one transaction committed around the sends), "abort" (with transactional:
 *       a second transaction of the same records aborted afterwards), any "name=value" is a producer
 *       property (acks=1, enable.idempotence=false, linger.ms=5, ...). Without "idempotent" or
 *       "transactional" enable.idempotence is false.
 *       -> {"acks": [{"index", "partition", "offset", "timestamp"} | {"index", "error"}], "error": null}
 *   consume <bootstrap> <topic> <expected-count> <timeout-ms> [read_committed] [seek=<offset>] [name=value ...]
 *       assign() every partition (no group), seekToBeginning, poll until expected-count records or
 *       the deadline.
 *       -> {"records": [{"partition", "offset", "timestamp", "timestampType", "key", "value",
 *                        "headers": [[k, v]]}], "error": null}   (key/value/header values: hex or null)
 *   admin <bootstrap> <json-list-of-operations>
 *       Runs each operation with the Admin client; every one answers {"op", "result", "error"}
 *       ("error" is "ExceptionClass: message" of the failure's cause, else null):
 *         {"op": "createTopics", "topics": [{"name", "partitions", "replicationFactor", "configs"}]}
 *         {"op": "listTopics"}
 *         {"op": "describeTopics", "names": [...]}
 *         {"op": "describeConfigs", "topic": t} | {"op": "describeConfigs", "broker": "1"}
 *         {"op": "incrementalAlterConfigs", "topic": t | "broker": id or "", "set": {k: v}, "delete": [k]}
 *         {"op": "createPartitions", "topic": t, "count": n}
 *         {"op": "deleteRecords", "topic": t, "partition": p, "offset": o}
 *         {"op": "listOffsets", "topic": t, "partition": p,
 *          "spec": "earliest" | "latest" | "maxTimestamp" | "timestamp:<ms>"}
 *         {"op": "describeCluster"}
 *         {"op": "describeLogDirs", "brokers": [id, ...]}
 *         {"op": "deleteTopics", "names": [...]}
 *       -> {"results": [...]}
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeProducersOptions;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupResult;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

public class ClientsProgram {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final long BASE_TIMESTAMP = 1_700_000_000_000L;
    private static final long WAIT_SECONDS = 30;

    public static void main(String[] args) throws Exception {
        // Everything the clients print goes to stderr; stdout carries the answer only.
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        System.setOut(System.err);
        ObjectNode reply;
        try {
            switch (args[0]) {
                case "produce":
                    reply = produce(args);
                    break;
                case "consume":
                    reply = consume(args);
                    break;
                case "admin":
                    reply = admin(args);
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[0]);
            }
        } catch (Throwable e) {
            reply = F.objectNode();
            reply.put("error", describe(e));
        }
        out.println(MAPPER.writeValueAsString(reply));
        out.flush();
        System.exit(0);  // client threads must not keep the JVM alive
    }

    // ---------------------------------------------------------------- produce

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static ProducerRecord<byte[], byte[]> expected(String topic, int i) {
        byte[] key = i % 4 == 0 ? null : utf8("k-" + i);
        byte[] value = i % 4 == 1 ? null : utf8("v-" + i + "-" + "x".repeat(i % 7));
        List<Header> headers = new ArrayList<>();
        if (i % 4 == 2) {
            headers.add(new RecordHeader("h1", utf8("a-" + i)));
            headers.add(new RecordHeader("h2", (byte[]) null));
        } else if (i % 4 == 3) {
            headers.add(new RecordHeader("h1", new byte[0]));
        }
        return new ProducerRecord<>(topic, 0, BASE_TIMESTAMP + i, key, value, headers);
    }

    static ObjectNode produce(String[] args) throws Exception {
        String bootstrap = args[1];
        String topic = args[2];
        String compression = args[3];
        int count = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "4096");  // several batches per run
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        boolean transactional = false;
        boolean abort = false;
        for (int a = 5; a < args.length; a++) {
            String opt = args[a];
            if (opt.equals("idempotent")) {
                props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
                props.put(ProducerConfig.ACKS_CONFIG, "all");
            } else if (opt.equals("transactional")) {
                transactional = true;
                props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
                props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kwire-interop-" + topic);
                props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
            } else if (opt.equals("abort")) {
                abort = true;
            } else if (opt.contains("=")) {
                int eq = opt.indexOf('=');
                props.put(opt.substring(0, eq), opt.substring(eq + 1));
            } else {
                throw new IllegalArgumentException("unknown produce option " + opt);
            }
        }
        ObjectNode reply = F.objectNode();
        ArrayNode acks = reply.putArray("acks");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (transactional) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                futures.add(producer.send(expected(topic, i)));
            }
            if (transactional) {
                producer.commitTransaction();
            } else {
                producer.flush();
            }
            for (int i = 0; i < count; i++) {
                ObjectNode ack = acks.addObject();
                ack.put("index", i);
                try {
                    RecordMetadata md = futures.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS);
                    ack.put("partition", md.partition());
                    ack.put("offset", md.hasOffset() ? md.offset() : -1);
                    ack.put("timestamp", md.hasTimestamp() ? md.timestamp() : -1);
                } catch (Exception e) {
                    ack.put("error", describe(e));
                }
            }
            if (transactional && abort) {
                producer.beginTransaction();
                for (int i = 0; i < count; i++) {
                    producer.send(expected(topic, i));
                }
                producer.flush();
                producer.abortTransaction();
            }
        }
        reply.putNull("error");
        return reply;
    }

    // ---------------------------------------------------------------- consume

    static String hex(byte[] b) {
        if (b == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    static ObjectNode consume(String[] args) throws Exception {
        String bootstrap = args[1];
        String topic = args[2];
        int expected = Integer.parseInt(args[3]);
        long timeoutMs = Long.parseLong(args[4]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        long seek = -1;  // seek=<offset>: start there (every partition) instead of the beginning
        for (int a = 5; a < args.length; a++) {
            if (args[a].equals("read_committed")) {
                props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            } else if (args[a].startsWith("seek=")) {
                seek = Long.parseLong(args[a].substring(5));
            } else if (args[a].contains("=")) {
                int eq = args[a].indexOf('=');
                props.put(args[a].substring(0, eq), args[a].substring(eq + 1));
            } else {
                throw new IllegalArgumentException("unknown consume option " + args[a]);
            }
        }
        ObjectNode reply = F.objectNode();
        ArrayNode records = reply.putArray("records");
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(WAIT_SECONDS));
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : infos) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            if (seek < 0) {
                consumer.seekToBeginning(partitions);
            } else {
                for (TopicPartition tp : partitions) {
                    consumer.seek(tp, seek);
                }
            }
            int seen = 0;
            while (seen < expected && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    ObjectNode rec = records.addObject();
                    rec.put("partition", r.partition());
                    rec.put("offset", r.offset());
                    rec.put("timestamp", r.timestamp());
                    rec.put("timestampType", r.timestampType().name);
                    rec.put("key", hex(r.key()));
                    rec.put("value", hex(r.value()));
                    ArrayNode hs = rec.putArray("headers");
                    for (Header h : r.headers()) {
                        ArrayNode pair = hs.addArray();
                        pair.add(h.key());
                        pair.add(hex(h.value()));
                    }
                    seen++;
                }
            }
        }
        reply.putNull("error");
        return reply;
    }

    // ---------------------------------------------------------------- admin

    static ObjectNode admin(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        for (int a = 3; a < args.length; a++) {  // client settings, k=v (security)
            int eq = args[a].indexOf('=');
            props.put(args[a].substring(0, eq), args[a].substring(eq + 1));
        }
        JsonNode ops = MAPPER.readTree(args[2]);
        ObjectNode reply = F.objectNode();
        ArrayNode results = reply.putArray("results");
        try (Admin admin = Admin.create(props)) {
            for (JsonNode op : ops) {
                ObjectNode entry = results.addObject();
                entry.put("op", op.get("op").asText());
                try {
                    entry.set("result", adminOp(admin, op));
                    entry.putNull("error");
                } catch (Exception e) {
                    entry.putNull("result");
                    entry.put("error", describe(e));
                }
            }
        }
        reply.putNull("error");
        return reply;
    }

    static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    static ObjectNode node(Node n) {
        ObjectNode o = F.objectNode();
        if (n == null) {
            return o;
        }
        o.put("id", n.id());
        o.put("host", n.host());
        o.put("port", n.port());
        return o;
    }

    static ObjectNode configJson(Config config) {
        ObjectNode o = F.objectNode();
        for (ConfigEntry e : config.entries()) {
            ObjectNode c = o.putObject(e.name());
            c.put("value", e.value());
            c.put("source", e.source().name());
            c.put("isDefault", e.isDefault());
            c.put("readOnly", e.isReadOnly());
            c.put("sensitive", e.isSensitive());
        }
        return o;
    }

    static JsonNode adminOp(Admin admin, JsonNode op) throws Exception {
        String name = op.get("op").asText();
        switch (name) {
            case "createTopics": {
                List<NewTopic> topics = new ArrayList<>();
                for (JsonNode t : op.get("topics")) {
                    NewTopic nt = new NewTopic(
                        t.get("name").asText(),
                        t.path("partitions").asInt(1),
                        (short) t.path("replicationFactor").asInt(1));
                    Map<String, String> configs = new HashMap<>();
                    Iterator<Map.Entry<String, JsonNode>> it = t.path("configs").fields();
                    while (it.hasNext()) {
                        Map.Entry<String, JsonNode> e = it.next();
                        configs.put(e.getKey(), e.getValue().asText());
                    }
                    nt.configs(configs);
                    topics.add(nt);
                }
                CreateTopicsResult res = admin.createTopics(topics);
                ObjectNode o = F.objectNode();
                for (NewTopic nt : topics) {
                    ObjectNode r = o.putObject(nt.name());
                    try {
                        get(res.all());
                        r.put("numPartitions", get(res.numPartitions(nt.name())));
                        r.put("replicationFactor", get(res.replicationFactor(nt.name())));
                        r.put("topicId", String.valueOf(get(res.topicId(nt.name()))));
                        r.putNull("error");
                    } catch (Exception e) {
                        r.put("error", describe(e));
                    }
                }
                return o;
            }
            case "listTopics": {
                ArrayNode a = F.arrayNode();
                List<String> names = new ArrayList<>(get(admin.listTopics().names()));
                Collections.sort(names);
                names.forEach(a::add);
                return a;
            }
            case "describeTopics": {
                List<String> names = new ArrayList<>();
                op.get("names").forEach(n -> names.add(n.asText()));
                Map<String, TopicDescription> descs = get(admin.describeTopics(names).allTopicNames());
                ObjectNode o = F.objectNode();
                for (String n : names) {
                    TopicDescription d = descs.get(n);
                    ObjectNode t = o.putObject(n);
                    t.put("internal", d.isInternal());
                    t.put("topicId", String.valueOf(d.topicId()));
                    ArrayNode ps = t.putArray("partitions");
                    for (TopicPartitionInfo p : d.partitions()) {
                        ObjectNode po = ps.addObject();
                        po.put("partition", p.partition());
                        po.set("leader", node(p.leader()));
                        ArrayNode replicas = po.putArray("replicas");
                        p.replicas().forEach(r -> replicas.add(r.id()));
                        ArrayNode isr = po.putArray("isr");
                        p.isr().forEach(r -> isr.add(r.id()));
                    }
                }
                return o;
            }
            case "describeConfigs": {
                ConfigResource resource = configResource(op);
                Map<ConfigResource, Config> configs =
                    get(admin.describeConfigs(Collections.singleton(resource)).all());
                return configJson(configs.get(resource));
            }
            case "incrementalAlterConfigs": {
                ConfigResource resource = configResource(op);
                List<AlterConfigOp> alter = new ArrayList<>();
                Iterator<Map.Entry<String, JsonNode>> it = op.path("set").fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    alter.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()),
                        AlterConfigOp.OpType.SET));
                }
                for (JsonNode k : op.path("delete")) {
                    alter.add(new AlterConfigOp(new ConfigEntry(k.asText(), null), AlterConfigOp.OpType.DELETE));
                }
                Iterator<Map.Entry<String, JsonNode>> appends = op.path("append").fields();
                while (appends.hasNext()) {
                    Map.Entry<String, JsonNode> e = appends.next();
                    alter.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()),
                        AlterConfigOp.OpType.APPEND));
                }
                Map<ConfigResource, Collection<AlterConfigOp>> request = new HashMap<>();
                request.put(resource, alter);
                get(admin.incrementalAlterConfigs(request).all());
                return F.booleanNode(true);
            }
            case "createPartitions": {
                Map<String, NewPartitions> request = new HashMap<>();
                int count = op.get("count").asInt();
                request.put(op.get("topic").asText(), op.has("assignments")
                    ? NewPartitions.increaseTo(count, intLists(op.get("assignments")))
                    : NewPartitions.increaseTo(count));
                get(admin.createPartitions(request).all());
                return F.booleanNode(true);
            }
            case "electLeaders": {
                Set<TopicPartition> partitions = new HashSet<>();
                for (JsonNode p : op.get("partitions")) {
                    partitions.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt()));
                }
                ElectionType type = ElectionType.valueOf(op.path("type").asText("PREFERRED"));
                Map<TopicPartition, Optional<Throwable>> found =
                    get(admin.electLeaders(type, partitions).partitions());
                ObjectNode o = F.objectNode();
                for (Map.Entry<TopicPartition, Optional<Throwable>> e : found.entrySet()) {
                    o.put(e.getKey().toString(), e.getValue().map(ClientsProgram::describe).orElse(null));
                }
                return o;
            }
            case "alterPartitionReassignments": {
                Map<TopicPartition, Optional<NewPartitionReassignment>> request = new HashMap<>();
                for (JsonNode p : op.get("partitions")) {
                    TopicPartition tp = new TopicPartition(p.get(0).asText(), p.get(1).asInt());
                    request.put(tp, p.get(2).isNull() ? Optional.empty()
                        : Optional.of(new NewPartitionReassignment(intList(p.get(2)))));
                }
                ObjectNode o = F.objectNode();
                for (Map.Entry<TopicPartition, KafkaFuture<Void>> e
                        : admin.alterPartitionReassignments(request).values().entrySet()) {
                    try {
                        get(e.getValue());
                        o.putNull(e.getKey().toString());
                    } catch (Exception ex) {
                        o.put(e.getKey().toString(), describe(ex));
                    }
                }
                return o;
            }
            case "listPartitionReassignments": {
                ObjectNode o = F.objectNode();
                for (Map.Entry<TopicPartition, PartitionReassignment> e
                        : get(admin.listPartitionReassignments().reassignments()).entrySet()) {
                    ArrayNode replicas = o.putArray(e.getKey().toString());
                    e.getValue().replicas().forEach(replicas::add);
                }
                return o;
            }
            case "describeMetadataQuorum": {
                QuorumInfo quorum = get(admin.describeMetadataQuorum().quorumInfo());
                ObjectNode o = F.objectNode();
                o.put("leaderId", quorum.leaderId());
                o.put("leaderEpoch", quorum.leaderEpoch());
                o.put("highWatermark", quorum.highWatermark());
                ArrayNode voters = o.putArray("voters");
                for (QuorumInfo.ReplicaState r : quorum.voters()) {
                    voters.addObject().put("id", r.replicaId()).put("logEndOffset", r.logEndOffset());
                }
                ArrayNode observers = o.putArray("observers");
                for (QuorumInfo.ReplicaState r : quorum.observers()) {
                    observers.addObject().put("id", r.replicaId()).put("logEndOffset", r.logEndOffset());
                }
                return o;
            }
            case "alterReplicaLogDirs": {
                Map<TopicPartitionReplica, String> request = new HashMap<>();
                for (JsonNode r : op.get("replicas")) {
                    request.put(new TopicPartitionReplica(r.get(0).asText(), r.get(1).asInt(), r.get(2).asInt()),
                        r.get(3).asText());
                }
                ObjectNode o = F.objectNode();
                for (Map.Entry<TopicPartitionReplica, KafkaFuture<Void>> e
                        : admin.alterReplicaLogDirs(request).values().entrySet()) {
                    try {
                        get(e.getValue());
                        o.putNull(e.getKey().toString());
                    } catch (Exception ex) {
                        o.put(e.getKey().toString(), describe(ex));
                    }
                }
                return o;
            }
            case "deleteRecords": {
                TopicPartition tp = new TopicPartition(op.get("topic").asText(), op.get("partition").asInt());
                Map<TopicPartition, RecordsToDelete> request = new HashMap<>();
                request.put(tp, RecordsToDelete.beforeOffset(op.get("offset").asLong()));
                long low = get(admin.deleteRecords(request).lowWatermarks().get(tp)).lowWatermark();
                ObjectNode o = F.objectNode();
                o.put("lowWatermark", low);
                return o;
            }
            case "listOffsets": {
                TopicPartition tp = new TopicPartition(op.get("topic").asText(), op.get("partition").asInt());
                String spec = op.get("spec").asText();
                OffsetSpec offsetSpec;
                if (spec.equals("earliest")) {
                    offsetSpec = OffsetSpec.earliest();
                } else if (spec.equals("latest")) {
                    offsetSpec = OffsetSpec.latest();
                } else if (spec.equals("maxTimestamp")) {
                    offsetSpec = OffsetSpec.maxTimestamp();
                } else if (spec.startsWith("timestamp:")) {
                    offsetSpec = OffsetSpec.forTimestamp(Long.parseLong(spec.substring("timestamp:".length())));
                } else {
                    throw new IllegalArgumentException("unknown offset spec " + spec);
                }
                Map<TopicPartition, OffsetSpec> request = new HashMap<>();
                request.put(tp, offsetSpec);
                ListOffsetsResult.ListOffsetsResultInfo info = get(admin.listOffsets(request).partitionResult(tp));
                ObjectNode o = F.objectNode();
                o.put("offset", info.offset());
                o.put("timestamp", info.timestamp());
                o.put("leaderEpoch", info.leaderEpoch().orElse(-1));
                return o;
            }
            case "describeProducers": {
                // "broker": the node to ask (DescribeProducersOptions.brokerId), else the leader.
                TopicPartition tp = new TopicPartition(op.get("topic").asText(), op.get("partition").asInt());
                DescribeProducersOptions options = new DescribeProducersOptions();
                if (op.has("broker")) {
                    options.brokerId(op.get("broker").asInt());
                }
                DescribeProducersResult.PartitionProducerState state =
                    get(admin.describeProducers(List.of(tp), options).partitionResult(tp));
                ArrayNode producers = F.arrayNode();
                for (ProducerState p : state.activeProducers()) {
                    ObjectNode o = producers.addObject();
                    o.put("producerId", p.producerId());
                    o.put("producerEpoch", p.producerEpoch());
                    o.put("lastSequence", p.lastSequence());
                }
                return producers;
            }
            case "describeCluster": {
                DescribeClusterResult res = admin.describeCluster();
                ObjectNode o = F.objectNode();
                o.put("clusterId", get(res.clusterId()));
                o.set("controller", node(get(res.controller())));
                ArrayNode nodes = o.putArray("nodes");
                for (Node n : get(res.nodes())) {
                    nodes.add(node(n));
                }
                return o;
            }
            case "describeLogDirs": {
                List<Integer> brokers = new ArrayList<>();
                op.get("brokers").forEach(b -> brokers.add(b.asInt()));
                Map<Integer, Map<String, LogDirDescription>> all =
                    get(admin.describeLogDirs(brokers).allDescriptions());
                ObjectNode o = F.objectNode();
                for (Map.Entry<Integer, Map<String, LogDirDescription>> b : all.entrySet()) {
                    ObjectNode bo = o.putObject(String.valueOf(b.getKey()));
                    for (Map.Entry<String, LogDirDescription> d : b.getValue().entrySet()) {
                        ObjectNode dobj = bo.putObject(d.getKey());
                        dobj.put("error", d.getValue().error() == null ? null : describe(d.getValue().error()));
                        ObjectNode replicas = dobj.putObject("replicas");
                        for (Map.Entry<TopicPartition, ReplicaInfo> r : d.getValue().replicaInfos().entrySet()) {
                            ObjectNode ro = replicas.putObject(r.getKey().toString());
                            ro.put("size", r.getValue().size());
                            ro.put("offsetLag", r.getValue().offsetLag());
                            ro.put("isFuture", r.getValue().isFuture());
                        }
                    }
                }
                return o;
            }
            case "removeMembersFromConsumerGroup": {
                // KIP-345: static members removed by group.instance.id (LeaveGroup v3+, no member id)
                List<MemberToRemove> members = new ArrayList<>();
                op.get("instances").forEach(i -> members.add(new MemberToRemove(i.asText())));
                RemoveMembersFromConsumerGroupResult res = admin.removeMembersFromConsumerGroup(
                    op.get("group").asText(), new RemoveMembersFromConsumerGroupOptions(members));
                ObjectNode o = F.objectNode();
                for (MemberToRemove m : members) {
                    try {
                        get(res.memberResult(m));
                        o.putNull(m.groupInstanceId());
                    } catch (Exception e) {
                        o.put(m.groupInstanceId(), describe(e));
                    }
                }
                return o;
            }
            case "deleteTopics": {
                List<String> names = new ArrayList<>();
                op.get("names").forEach(n -> names.add(n.asText()));
                get(admin.deleteTopics(names).all());
                return F.booleanNode(true);
            }
            case "describeFeatures": {
                FeatureMetadata features = get(admin.describeFeatures().featureMetadata());
                ObjectNode o = F.objectNode();
                ObjectNode finalized = o.putObject("finalized");
                for (Map.Entry<String, FinalizedVersionRange> e : features.finalizedFeatures().entrySet()) {
                    finalized.put(e.getKey(), e.getValue().maxVersionLevel());
                }
                ObjectNode supported = o.putObject("supported");
                for (Map.Entry<String, SupportedVersionRange> e : features.supportedFeatures().entrySet()) {
                    supported.putArray(e.getKey()).add(e.getValue().minVersion()).add(e.getValue().maxVersion());
                }
                o.put("epoch", features.finalizedFeaturesEpoch().orElse(-1L));
                return o;
            }
            case "updateFeatures": {
                Map<String, FeatureUpdate> updates = new HashMap<>();
                Iterator<Map.Entry<String, JsonNode>> fields = op.get("features").fields();
                while (fields.hasNext()) {
                    Map.Entry<String, JsonNode> f = fields.next();
                    updates.put(f.getKey(), new FeatureUpdate((short) f.getValue().get(0).asInt(),
                        FeatureUpdate.UpgradeType.valueOf(f.getValue().get(1).asText())));
                }
                UpdateFeaturesOptions options = new UpdateFeaturesOptions()
                    .validateOnly(op.path("validateOnly").asBoolean(false));
                ObjectNode o = F.objectNode();
                for (Map.Entry<String, KafkaFuture<Void>> e : admin.updateFeatures(updates, options).values().entrySet()) {
                    try {
                        get(e.getValue());
                        o.putNull(e.getKey());
                    } catch (Exception ex) {
                        o.put(e.getKey(), describe(ex));
                    }
                }
                return o;
            }
            case "listClientMetricsResources": {
                ArrayNode names = F.arrayNode();
                List<String> found = new ArrayList<>();
                get(admin.listClientMetricsResources().all()).forEach(r -> found.add(r.name()));
                Collections.sort(found);
                found.forEach(names::add);
                return names;
            }
            case "addRaftVoter": {
                Set<RaftVoterEndpoint> endpoints = new HashSet<>();
                op.path("endpoints").forEach(e -> endpoints.add(new RaftVoterEndpoint(
                    e.get("name").asText(), e.get("host").asText(), e.get("port").asInt())));
                get(admin.addRaftVoter(op.get("voter").asInt(),
                    Uuid.fromString(op.get("directory").asText()), endpoints).all());
                return F.booleanNode(true);
            }
            case "removeRaftVoter": {
                get(admin.removeRaftVoter(op.get("voter").asInt(),
                    Uuid.fromString(op.get("directory").asText())).all());
                return F.booleanNode(true);
            }
            case "unregisterBroker": {
                get(admin.unregisterBroker(op.get("broker").asInt()).all());
                return F.booleanNode(true);
            }
            case "createDelegationToken": {
                CreateDelegationTokenOptions options = new CreateDelegationTokenOptions()
                    .maxlifeTimeMs(op.path("maxLifetimeMs").asLong(-1));
                List<KafkaPrincipal> renewers = new ArrayList<>();
                op.path("renewers").forEach(r -> renewers.add(new KafkaPrincipal("User", r.asText())));
                options.renewers(renewers);
                if (op.has("owner")) {
                    options.owner(new KafkaPrincipal("User", op.get("owner").asText()));
                }
                return tokenJson(get(admin.createDelegationToken(options).delegationToken()));
            }
            case "describeDelegationToken": {
                DescribeDelegationTokenOptions options = new DescribeDelegationTokenOptions();
                if (op.has("owners")) {
                    List<KafkaPrincipal> owners = new ArrayList<>();
                    op.get("owners").forEach(o -> owners.add(new KafkaPrincipal("User", o.asText())));
                    options.owners(owners);
                }
                ArrayNode tokens = F.arrayNode();
                for (DelegationToken t : get(admin.describeDelegationToken(options).delegationTokens())) {
                    tokens.add(tokenJson(t));
                }
                return tokens;
            }
            case "renewDelegationToken": {
                byte[] hmac = Base64.getDecoder().decode(op.get("hmac").asText());
                RenewDelegationTokenOptions options = new RenewDelegationTokenOptions()
                    .renewTimePeriodMs(op.path("periodMs").asLong(-1));
                return F.numberNode(get(admin.renewDelegationToken(hmac, options).expiryTimestamp()));
            }
            case "expireDelegationToken": {
                byte[] hmac = Base64.getDecoder().decode(op.get("hmac").asText());
                ExpireDelegationTokenOptions options = new ExpireDelegationTokenOptions()
                    .expiryTimePeriodMs(op.path("periodMs").asLong(-1));
                return F.numberNode(get(admin.expireDelegationToken(hmac, options).expiryTimestamp()));
            }
            default:
                throw new IllegalArgumentException("unknown admin op " + name);
        }
    }

    static ConfigResource configResource(JsonNode op) {
        if (op.has("topic")) {
            return new ConfigResource(ConfigResource.Type.TOPIC, op.get("topic").asText());
        }
        if (op.has("clientMetrics")) {
            return new ConfigResource(ConfigResource.Type.CLIENT_METRICS, op.get("clientMetrics").asText());
        }
        return new ConfigResource(ConfigResource.Type.BROKER, op.get("broker").asText());
    }

    static ObjectNode tokenJson(DelegationToken token) {
        TokenInformation info = token.tokenInfo();
        ObjectNode o = F.objectNode();
        o.put("tokenId", info.tokenId());
        o.put("hmac", token.hmacAsBase64String());
        o.put("owner", info.owner().toString());
        o.put("requester", info.tokenRequester().toString());
        ArrayNode renewers = o.putArray("renewers");
        info.renewers().forEach(r -> renewers.add(r.toString()));
        o.put("issue", info.issueTimestamp());
        o.put("expiry", info.expiryTimestamp());
        o.put("max", info.maxTimestamp());
        return o;
    }

    static List<Integer> intList(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    static List<List<Integer>> intLists(JsonNode array) {
        List<List<Integer>> out = new ArrayList<>();
        array.forEach(n -> out.add(intList(n)));
        return out;
    }

    static String describe(Throwable e) {
        Throwable cause = e;
        while ((cause instanceof ExecutionException || cause.getClass().getSimpleName().equals("CompletionException"))
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}
