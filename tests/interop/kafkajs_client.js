// kwire's kafkajs interop client (tests/interop/test_kcat_kafkajs.py). One command per run; the
// answer is one JSON line on stdout. kafkajs comes from NODE_PATH (tools/interop_extra.sh puts it
// in .cache/npm/node_modules).
//
//   node kafkajs_client.js produce <broker> <topic> <count> <none|gzip>
//       records i = 0..count-1: key "k-<i>" (null when i % 4 == 0), value "v-<i>" (null when
//       i % 4 == 1), header {"h": "a-<i>"} when i % 4 == 2, timestamp 1700000000000 + i, partition 0
//       -> {"acks": [{"partition", "baseOffset"}]}
//   node kafkajs_client.js consume <broker> <topic> <count> <timeout-ms>
//       a consumer group (kafkajs has no assign()): subscribe fromBeginning, run until count records
//       or the deadline -> {"records": [{"partition", "offset", "timestamp", "key", "value",
//       "headers"}]} (hex strings, null for null)
//   node kafkajs_client.js admin <broker> <topic> <partitions>
//       createTopics, listTopics, fetchTopicMetadata, fetchTopicOffsets, deleteTopics
//       -> {"created", "listed", "metadata", "offsets", "afterDelete"}
"use strict";

const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

const BASE_TS = 1700000000000;
const [command, broker, topic, arg1, arg2] = process.argv.slice(2);

const kafka = new Kafka({
  clientId: "kwire-interop-kafkajs",
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 10000,
  requestTimeout: 15000,
  retry: { retries: 5, initialRetryTime: 200 },
});

function hex(buffer) {
  return buffer === null || buffer === undefined ? null : Buffer.from(buffer).toString("hex");
}

async function produce(count, codec) {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const messages = [];
    for (let i = 0; i < count; i++) {
      const m = {
        partition: 0,
        key: i % 4 === 0 ? null : `k-${i}`,
        value: i % 4 === 1 ? null : `v-${i}`,
        timestamp: String(BASE_TS + i),
      };
      if (i % 4 === 2) m.headers = { h: `a-${i}` };
      messages.push(m);
    }
    const compression = codec === "gzip" ? CompressionTypes.GZIP : CompressionTypes.None;
    const acks = await producer.send({ topic, messages, acks: -1, compression });
    return { acks: acks.map((a) => ({ partition: a.partition, baseOffset: Number(a.baseOffset) })) };
  } finally {
    await producer.disconnect();
  }
}

async function consume(count, timeoutMs) {
  const consumer = kafka.consumer({
    groupId: `kwire-interop-${topic}`,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 200,
  });
  const records = [];
  let failure = null;
  consumer.on(consumer.events.CRASH, (event) => {
    failure = `crash: ${event.payload.error && event.payload.error.message}`;
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const headers = {};
          for (const [k, v] of Object.entries(message.headers || {})) headers[k] = hex(v);
          records.push({
            partition,
            offset: Number(message.offset),
            timestamp: Number(message.timestamp),
            key: hex(message.key),
            value: hex(message.value),
            headers,
          });
          if (records.length >= count) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch((err) => {
        failure = `${err.name}: ${err.message}`;
        resolve();
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return { records, failure };
}

async function admin(partitions) {
  const client = kafka.admin();
  await client.connect();
  try {
    const created = await client.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1,
                 configEntries: [{ name: "retention.ms", value: "3600000" }] }],
      waitForLeaders: true,
      timeout: 15000,
    });
    const listed = await client.listTopics();
    const metadata = await client.fetchTopicMetadata({ topics: [topic] });
    const offsets = await client.fetchTopicOffsets(topic);
    await client.deleteTopics({ topics: [topic], timeout: 15000 });
    const afterDelete = await client.listTopics();
    return {
      created,
      listed: listed.sort(),
      metadata: metadata.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partition: p.partitionId, leader: p.leader }))
          .sort((a, b) => a.partition - b.partition),
      })),
      offsets: offsets.map((o) => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }))
        .sort((a, b) => a.partition - b.partition),
      afterDelete: afterDelete.sort(),
    };
  } finally {
    await client.disconnect();
  }
}

async function main() {
  if (command === "produce") return produce(Number(arg1), arg2 || "none");
  if (command === "consume") return consume(Number(arg1), Number(arg2));
  if (command === "admin") return admin(Number(arg1));
  throw new Error(`unknown command ${command}`);
}

main().then(
  (reply) => {
    process.stdout.write(JSON.stringify({ ...reply, error: null }) + "\n");
    process.exit(0);
  },
  (err) => {
    process.stdout.write(JSON.stringify({ error: `${err.name}: ${err.message}` }) + "\n");
    process.exit(0);
  },
);
