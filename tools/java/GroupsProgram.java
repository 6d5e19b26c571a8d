/*
 * kwire's consumer-group interop program: Kafka's own KafkaConsumer (kafka-clients 3.9.1, the classic
 * group protocol) against a broker. Used by tests/interop/test_java_groups.py.
 *
 * One scenario per run; the answer is ONE JSON line on stdout (the last line; everything the clients
 * print goes to stderr). Every consumer of a scenario lives in this one JVM and is polled in turn
 * from the main thread (KafkaConsumer is not thread-safe), 50 ms per poll, so no wait is unbounded:
 * each phase has a deadline and a phase that misses it ends the scenario with an "error".
 *
 *   share <bootstrap> <topic> <group>
 *       Three consumers subscribe; waits until each owns 2 of the 6 partitions; closes the third
 *       (it sends LeaveGroup); waits until the other two own all 6 (3 each).
 *       -> {"initial": {name: [p...]}, "initialGenerations": {name: g}, "final": {...},
 *           "finalGenerations": {...}, "stableMs": n, "takeoverMs": n, "error": null}
 *   static <bootstrap> <topic> <group>
 *       Three consumers with group.instance.id; waits for 2/2/2; closes the third (a static member
 *       does not leave on close) and starts it again with the same group.instance.id; waits until it
 *       owns partitions again, then polls everyone 3 s more.
 *       -> {"initial", "initialGenerations", "final", "finalGenerations",
 *           "events": {name: [[kind, [p...]], ...]} (rebalance callbacks after the first stable
 *           assignment), "rejoinMs": n, "error": null}
 *   cooperative <bootstrap> <topic> <group>
 *       Two consumers with the CooperativeStickyAssignor; waits for 3/3; a third joins; waits for
 *       2/2/2 and polls 2 s more.
 *       -> {"initial", "final", "events" (callbacks after the third joined), "rebalanceMs": n,
 *           "error": null}
 *   commit <bootstrap> <topic> <group> <expected> <settle-ms>
 *       One consumer subscribes, reads until <expected> records arrived, keeps polling <settle-ms>
 *       to catch any extra one, commits synchronously and closes.
 *       -> {"committedBefore": {p: offset|null}, "values": [utf8...], "committedAfter": {...},
 *           "error": null}
 */

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

public class GroupsProgram {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final long PHASE_MS = 60_000;
    private static final Duration POLL = Duration.ofMillis(50);

    /** One consumer and what its rebalance listener saw. */
    static final class Member {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<Object[]> events = new ArrayList<>();
        final List<String> values = new ArrayList<>();
        boolean recording = false;

        Member(String name, Properties props) {
            this.name = name;
            this.consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        void subscribe(String topic) {
            consumer.subscribe(Collections.singletonList(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    record("revoked", partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    record("assigned", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    record("lost", partitions);
                }
            });
        }

        void record(String kind, Collection<TopicPartition> partitions) {
            if (recording) {
                events.add(new Object[] {kind, numbers(partitions)});
            }
        }

        void poll() {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) {
                values.add(r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8));
            }
        }

        Set<Integer> owned() {
            return numbers(consumer.assignment());
        }

        int generation() {
            return consumer.groupMetadata().generationId();
        }
    }

    static Set<Integer> numbers(Collection<TopicPartition> partitions) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : partitions) {
            out.add(tp.partition());
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        System.setOut(System.err);
        ObjectNode reply = F.objectNode();
        List<Member> all = new ArrayList<>();
        try {
            switch (args[0]) {
                case "share":
                    share(args, reply, all);
                    break;
                case "static":
                    staticMembership(args, reply, all);
                    break;
                case "cooperative":
                    cooperative(args, reply, all);
                    break;
                case "commit":
                    commit(args, reply, all);
                    break;
                default:
                    throw new IllegalArgumentException("unknown scenario " + args[0]);
            }
            reply.putNull("error");
        } catch (Throwable e) {
            reply.put("error", describe(e));
        }
        for (Member m : all) {
            try {
                m.consumer.close(Duration.ofSeconds(5));
            } catch (Throwable ignored) {
                // already closed, or the broker is gone
            }
        }
        out.println(MAPPER.writeValueAsString(reply));
        out.flush();
        System.exit(0);  // client threads must not keep the JVM alive
    }

    static Properties props(String bootstrap, String group, String... extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        for (String kv : extra) {
            int eq = kv.indexOf('=');
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return p;
    }

    static Member start(List<Member> all, String name, String topic, Properties props) {
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        Member m = new Member(name, props);
        m.subscribe(topic);
        all.add(m);
        return m;
    }

    /** Polls every member in turn until done() holds; returns the milliseconds it took. */
    static long pollUntil(String what, List<Member> members, BooleanSupplier done) {
        long start = System.nanoTime();
        long deadline = System.currentTimeMillis() + PHASE_MS;
        while (true) {
            for (Member m : members) {
                m.poll();
            }
            if (done.getAsBoolean()) {
                return (System.nanoTime() - start) / 1_000_000;
            }
            if (System.currentTimeMillis() > deadline) {
                StringBuilder sb = new StringBuilder();
                for (Member m : members) {
                    sb.append(' ').append(m.name).append('=').append(m.owned());
                }
                throw new IllegalStateException("timed out after " + PHASE_MS + " ms waiting for " + what
                    + ";" + sb);
            }
        }
    }

    static void pollFor(List<Member> members, long ms) {
        long end = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < end) {
            for (Member m : members) {
                m.poll();
            }
        }
    }

    /** Each member owns `each` partitions and together they own 0..total-1. */
    static boolean balanced(List<Member> members, int each, int total) {
        Set<Integer> union = new HashSet<>();
        int sum = 0;
        for (Member m : members) {
            Set<Integer> owned = m.owned();
            if (owned.size() != each) {
                return false;
            }
            union.addAll(owned);
            sum += owned.size();
        }
        return sum == total && union.size() == total;
    }

    static ObjectNode assignments(List<Member> members) {
        ObjectNode o = F.objectNode();
        for (Member m : members) {
            ArrayNode a = o.putArray(m.name);
            m.owned().forEach(a::add);
        }
        return o;
    }

    static ObjectNode generations(List<Member> members) {
        ObjectNode o = F.objectNode();
        for (Member m : members) {
            o.put(m.name, m.generation());
        }
        return o;
    }

    static ObjectNode events(List<Member> members) {
        ObjectNode o = F.objectNode();
        for (Member m : members) {
            ArrayNode a = o.putArray(m.name);
            for (Object[] e : m.events) {
                ArrayNode pair = a.addArray();
                pair.add((String) e[0]);
                ArrayNode ps = pair.addArray();
                @SuppressWarnings("unchecked")
                Set<Integer> parts = (Set<Integer>) e[1];
                parts.forEach(ps::add);
            }
        }
        return o;
    }

    // ---------------------------------------------------------------- scenarios

    static void share(String[] args, ObjectNode reply, List<Member> all) {
        String bootstrap = args[1], topic = args[2], group = args[3];
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(start(all, "c" + i, topic, props(bootstrap, group)));
        }
        reply.put("stableMs", pollUntil("2 partitions each", members, () -> balanced(members, 2, 6)));
        reply.set("initial", assignments(members));
        reply.set("initialGenerations", generations(members));
        Member leaving = members.remove(2);
        leaving.consumer.close(Duration.ofSeconds(10));
        all.remove(leaving);
        reply.put("takeoverMs", pollUntil("3 partitions each after a close", members,
            () -> balanced(members, 3, 6)));
        reply.set("final", assignments(members));
        reply.set("finalGenerations", generations(members));
    }

    static void staticMembership(String[] args, ObjectNode reply, List<Member> all) {
        String bootstrap = args[1], topic = args[2], group = args[3];
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(start(all, "c" + i, topic,
                props(bootstrap, group, "group.instance.id=static-" + i)));
        }
        pollUntil("2 partitions each", members, () -> balanced(members, 2, 6));
        pollFor(members, 1000);  // let every member settle on the generation
        reply.set("initial", assignments(members));
        reply.set("initialGenerations", generations(members));
        for (Member m : members) {
            m.recording = true;
        }
        Member old = members.remove(2);
        old.consumer.close(Duration.ofSeconds(10));
        all.remove(old);
        pollFor(members, 1000);
        Member again = start(all, "c2", topic, props(bootstrap, group, "group.instance.id=static-2"));
        again.recording = true;
        members.add(again);
        reply.put("rejoinMs", pollUntil("the restarted static member to own partitions", members,
            () -> !again.owned().isEmpty()));
        pollFor(members, 3000);
        reply.set("final", assignments(members));
        reply.set("finalGenerations", generations(members));
        reply.set("events", events(members));
    }

    static void cooperative(String[] args, ObjectNode reply, List<Member> all) {
        String bootstrap = args[1], topic = args[2], group = args[3];
        String assignor = "partition.assignment.strategy="
            + "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            members.add(start(all, "c" + i, topic, props(bootstrap, group, assignor)));
        }
        pollUntil("3 partitions each", members, () -> balanced(members, 3, 6));
        pollFor(members, 500);
        reply.set("initial", assignments(members));
        for (Member m : members) {
            m.recording = true;
        }
        Member third = start(all, "c2", topic, props(bootstrap, group, assignor));
        third.recording = true;
        members.add(third);
        reply.put("rebalanceMs", pollUntil("2 partitions each", members, () -> balanced(members, 2, 6)));
        pollFor(members, 2000);
        reply.set("final", assignments(members));
        reply.set("finalGenerations", generations(members));
        reply.set("events", events(members));
    }

    static ObjectNode committed(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> tps) {
        Map<TopicPartition, OffsetAndMetadata> found = consumer.committed(new HashSet<>(tps), Duration.ofSeconds(20));
        ObjectNode o = F.objectNode();
        for (TopicPartition tp : tps) {
            OffsetAndMetadata om = found.get(tp);
            if (om == null) {
                o.putNull(String.valueOf(tp.partition()));
            } else {
                o.put(String.valueOf(tp.partition()), om.offset());
            }
        }
        return o;
    }

    static void commit(String[] args, ObjectNode reply, List<Member> all) {
        String bootstrap = args[1], topic = args[2], group = args[3];
        int expected = Integer.parseInt(args[4]);
        long settleMs = Long.parseLong(args[5]);
        Member m = start(all, "committer", topic, props(bootstrap, group));
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo info : m.consumer.partitionsFor(topic, Duration.ofSeconds(20))) {
            tps.add(new TopicPartition(topic, info.partition()));
        }
        tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
        reply.set("committedBefore", committed(m.consumer, tps));
        List<Member> one = Collections.singletonList(m);
        pollUntil(expected + " records", one, () -> m.values.size() >= expected);
        pollFor(one, settleMs);
        m.consumer.commitSync(Duration.ofSeconds(20));
        reply.set("committedAfter", committed(m.consumer, tps));
        ArrayNode values = reply.putArray("values");
        m.values.forEach(values::add);
    }

    static String describe(Throwable e) {
        Throwable cause = e;
        while (cause instanceof ExecutionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}
