// KafkaJS against `kipviz serve`: tests/test_serve_kafkajs.py runs this once per batch of scenarios.
//
//   node scenarios.js '{"brokers": ["127.0.0.1:40001"], "sasl": ["127.0.0.1:40002"], "prefix": "x",
//                       "scenarios": ["produce", "group"], "users": {"alice": "pw"}}'
//
// Prints one JSON line per KafkaJS log entry at WARN or above ({"log": {...}}, tagged with the
// scenario it came from) and one per scenario ({"scenario": name, "result": ...} or
// {"scenario": name, "error": {name, type, message}}). The Python side decides what passes.
'use strict'

const {
  Kafka, logLevel, CompressionTypes, ConfigResourceTypes,
  AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes,
} = require('kafkajs')
const { errorCodes } = require('kafkajs/src/protocol/error')

// KafkaJS's name for a protocol error whose wrapper kept only the message (a non-retriable error
// thrown out of producer.send carries the message of the KafkaJSProtocolError, not its type)
const typeOf = e => e.type || (errorCodes.find(c => c.message === e.message) || {}).type

const cfg = JSON.parse(process.argv[2])
const WAIT_MS = 20000
// a consumer's Fetch MaxWaitMs: its disconnect waits for the fetch in flight (the default 5 s)
const MAX_WAIT_MS = 200
let current = null

const out = obj => process.stdout.write(JSON.stringify(obj) + '\n')

const logCreator = () => ({ namespace, label, log }) => {
  const { message, timestamp, logger, ...extra } = log
  out({ log: { scenario: current, level: label, namespace, message, error: extra.error, type: extra.type } })
}

function client (name, { sasl = null, retries = 5 } = {}) {
  return new Kafka({
    clientId: `kipviz-${name}`,
    brokers: sasl ? cfg.sasl : cfg.brokers,
    sasl: sasl || undefined,
    logLevel: logLevel.WARN,
    logCreator,
    connectionTimeout: 5000,
    requestTimeout: WAIT_MS,
    retry: { retries, initialRetryTime: 100, maxRetryTime: 2000 },
  })
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function until (what, check, ms = WAIT_MS) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

const range = n => [...Array(n).keys()]
const name = what => `${cfg.prefix}-${what}`

async function withAdmin (kafka, fn) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

// every value of `topic` from the beginning, read by a fresh group (read_committed unless told)
async function readAll (kafka, topic, n, { readUncommitted = false, settle = 0 } = {}) {
  const consumer = kafka.consumer({ groupId: name(`reader-${topic}-${readUncommitted}`), readUncommitted, maxWaitTimeInMs: MAX_WAIT_MS })
  const values = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { values.push(String(message.value)) } })
    await until(`${n} records of ${topic}`, () => values.length >= n)
    if (settle) await sleep(settle)
  } finally {
    await consumer.disconnect()
  }
  return values.sort()
}

// ---- scenarios ------------------------------------------------------------------------------------
const scenarios = {}

scenarios.produce = async () => {
  const kafka = client('produce')
  const topic = name('produce')
  await withAdmin(kafka, admin => admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }))
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acks = []
  try {
    for (const [codec, compression] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
      const sent = await producer.send({
        topic, acks: -1, compression,
        messages: range(20).map(i => ({ key: `k${i}`, value: `${codec}-${i}` })),
      })
      acks.push(...sent.map(r => ({ partition: r.partition, errorCode: r.errorCode, baseOffset: r.baseOffset })))
    }
    const plain = kafka.producer()             // acks=1, no idempotence
    await plain.connect()
    await plain.send({ topic, acks: 1, messages: [{ value: 'acks1' }] })
    await plain.disconnect()
  } finally {
    await producer.disconnect()
  }
  return { acks, values: await readAll(kafka, topic, 41) }
}

scenarios.group = async () => {
  const kafka = client('group')
  const topic = name('group')
  const groupId = name('group-g')
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] })
  const producer = kafka.producer()
  await producer.connect()
  const send = async (from, to) => producer.send({
    topic, messages: range(to - from).map(i => ({ value: String(from + i), partition: (from + i) % 4 })),
  })
  await send(0, 40)
  const seen = { one: [], two: [] }
  const joins = { one: [], two: [] }
  const members = {}
  for (const who of ['one', 'two']) {
    members[who] = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 300, rebalanceTimeout: 10000, maxWaitTimeInMs: MAX_WAIT_MS })
    members[who].on(members[who].events.GROUP_JOIN, e => joins[who].push(e.payload.memberAssignment[topic] || []))
  }
  const start = async who => {
    await members[who].connect()
    await members[who].subscribe({ topic, fromBeginning: true })
    await members[who].run({ eachMessage: async ({ message }) => { seen[who].push(Number(message.value)) } })
  }
  const committed = async () => {
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] })
    return t.partitions.reduce((sum, p) => sum + Math.max(Number(p.offset), 0), 0)
  }
  try {
    await start('one')
    await until('the first member to read and commit 40 records', async () => (await committed()) === 40)
    await start('two')
    const last = who => joins[who][joins[who].length - 1] || []
    await until('a rebalance giving both members partitions',
      () => joins.two.length >= 1 && joins.one.length >= 2 && last('one').length + last('two').length === 4 &&
        last('one').length > 0 && last('two').length > 0)
    await send(40, 48)
    await until('the 8 later records', () => seen.one.length + seen.two.length >= 48)
    const [described] = (await admin.describeGroups([groupId])).groups
    const listed = (await admin.listGroups()).groups.map(g => g.groupId)
    return {
      first: seen.one.slice(0, 40).sort((a, b) => a - b),
      later: [...seen.one.slice(40), ...seen.two].sort((a, b) => a - b),
      joinsOne: joins.one.length,
      assignments: [last('one').sort(), last('two').sort()],
      described: { state: described.state, members: described.members.length, protocol: described.protocol },
      listed: listed.includes(groupId),
    }
  } finally {
    await Promise.all([members.one.disconnect(), members.two.disconnect(), producer.disconnect()])
    await admin.disconnect()
  }
}

scenarios.transaction = async () => {
  const kafka = client('txn')
  const src = name('txn-in')
  const dst = name('txn-out')
  const groupId = name('txn-g')
  await withAdmin(kafka, admin => admin.createTopics({
    topics: [{ topic: src, numPartitions: 2 }, { topic: dst, numPartitions: 2 }],
  }))
  const plain = kafka.producer()
  await plain.connect()
  await plain.send({ topic: src, messages: range(10).map(i => ({ value: `in${i}`, partition: i % 2 })) })
  await plain.disconnect()
  // read the input without committing: the transaction commits the offsets
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: MAX_WAIT_MS })
  const read = []
  await consumer.connect()
  await consumer.subscribe({ topic: src, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => { read.push({ partition, offset: Number(message.offset), value: String(message.value) }) },
  })
  await until('10 input records', () => read.length >= 10)
  await consumer.disconnect()
  const producer = kafka.producer({ transactionalId: name('txn-id'), idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    const tx = await producer.transaction()
    await tx.send({ topic: dst, messages: read.map(r => ({ value: r.value.replace('in', 'out'), partition: r.partition })) })
    const ends = [0, 1].map(p => ({ partition: p, offset: String(Math.max(...read.filter(r => r.partition === p).map(r => r.offset)) + 1) }))
    await tx.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: src, partitions: ends }] })
    await tx.commit()
    const aborted = await producer.transaction()
    await aborted.send({ topic: dst, messages: [{ value: 'aborted', partition: 0 }] })
    await aborted.abort()
  } finally {
    await producer.disconnect()
  }
  const committed = await withAdmin(kafka, admin => admin.fetchOffsets({ groupId, topics: [src] }))
  return {
    committed: committed[0].partitions.map(p => [p.partition, Number(p.offset)]).sort(),
    readCommitted: await readAll(kafka, dst, 10, { settle: 1000 }),
    readUncommitted: await readAll(kafka, dst, 11, { readUncommitted: true }),
  }
}

scenarios.admin = async () => {
  const kafka = client('admin')
  const topic = name('admin')
  const groupId = name('admin-g')
  const r = {}
  await withAdmin(kafka, async admin => {
    r.created = await admin.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] })
    try {
      await admin.createTopics({ topics: [{ topic: name('bad'), configEntries: [{ name: 'cleanup.policy', value: 'bogus' }] }] })
      r.badConfig = 'created'
    } catch (e) {
      r.badConfig = (e.errors && e.errors[0] && e.errors[0].type) || e.type || e.name
    }
    r.listed = (await admin.listTopics()).includes(topic)
    await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
    r.partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
    await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] })
    const described = await admin.describeConfigs({
      includeSynonyms: true,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] },
        { type: ConfigResourceTypes.BROKER, name: '0', configNames: ['log.retention.ms'] }],
    })
    r.configs = described.resources.map(res => [res.resourceName, res.configEntries.map(e => [e.configName, e.configValue, e.isDefault])])
    const cluster = await admin.describeCluster()
    r.cluster = { brokers: cluster.brokers.map(b => `${b.host}:${b.port}`).sort(), controller: cluster.controller, id: cluster.clusterId }
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic, messages: range(6).map(i => ({ value: String(i), partition: 0 })) })
    await producer.disconnect()
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
    r.offsets = (await admin.fetchTopicOffsets(topic)).filter(p => p.partition === 0).map(p => [p.low, p.high])
    r.byTimestamp = (await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() + 60000)).filter(p => p.partition === 0).map(p => p.offset)
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: MAX_WAIT_MS })
    const read = []
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { read.push(Number(message.value)) } })
    await until('the records after the deleted ones', async () => {
      const [t] = await admin.fetchOffsets({ groupId, topics: [topic] })
      return read.length >= 2 && t.partitions.some(p => p.partition === 0 && p.offset === '6')
    })
    await consumer.disconnect()
    r.afterDelete = read.sort()
    r.groups = (await admin.listGroups()).groups.filter(g => g.groupId === groupId).map(g => g.protocolType)
    r.describedGroup = (await admin.describeGroups([groupId])).groups.map(g => g.state)
    // setOffsets and resetOffsets run a paused consumer of the group until its first fetch round, which
    // KafkaJS makes wait its default maxWaitTimeInMs (5 s) when every partition is paused: 5 s each
    await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '5' }] })
    r.setTo = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.filter(p => p.partition === 0).map(p => p.offset)
    await admin.resetOffsets({ groupId, topic, earliest: true })
    r.resetTo = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.filter(p => p.partition === 0).map(p => p.offset)
    r.deletedGroups = (await admin.deleteGroups([groupId])).map(g => g.errorCode)
    const acl = {
      resourceType: AclResourceTypes.TOPIC, resourceName: `${cfg.prefix}-acl`, resourcePatternType: ResourcePatternTypes.PREFIXED,
      principal: 'User:bob', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW,
    }
    await admin.createAcls({ acl: [acl] })
    const filter = { ...acl, resourcePatternType: ResourcePatternTypes.ANY }
    r.acls = (await admin.describeAcls(filter)).resources.map(res => [res.resourceName, res.acls.length])
    r.deletedAcls = (await admin.deleteAcls({ filters: [filter] })).filterResponses.map(f => f.matchingAcls.length)
    r.aclsAfter = (await admin.describeAcls(filter)).resources.length
    await admin.deleteTopics({ topics: [topic] })
    r.gone = !(await admin.listTopics()).includes(topic)
  })
  return r
}

// SASL on the SASL_PLAINTEXT listener: authenticate, be told the SASL ports, create and write in
// one's own prefix
for (const [key, mechanism] of [['plain', 'plain'], ['scram256', 'scram-sha-256'], ['scram512', 'scram-sha-512']]) {
  scenarios[`sasl_${key}`] = async () => {
    const kafka = client(`sasl-${key}`, { sasl: { mechanism, username: 'alice', password: cfg.users.alice } })
    const topic = `alice.${cfg.prefix}-${key}`
    const r = await withAdmin(kafka, async admin => {
      await admin.createTopics({ topics: [{ topic }] })
      return { brokers: (await admin.describeCluster()).brokers.map(b => `${b.host}:${b.port}`).sort() }
    })
    const producer = kafka.producer({ idempotent: true })
    await producer.connect()
    r.sent = (await producer.send({ topic, messages: [{ value: 'hello' }] }))[0].errorCode
    await producer.disconnect()
    r.values = await readAll(kafka, topic, 1)
    return r
  }
}

scenarios.sasl_wrong_password = async () => {
  const kafka = client('sasl-bad', { sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'wrong' }, retries: 0 })
  const admin = kafka.admin()
  try {
    await admin.connect()
    return { connected: true }
  } catch (e) {
    return { error: e.name }
  } finally {
    await admin.disconnect()
  }
}

scenarios.acl_denied = async () => {
  const kafka = client('acl', { sasl: { mechanism: 'scram-sha-512', username: 'bob', password: cfg.users.bob }, retries: 1 })
  const producer = kafka.producer()
  await producer.connect()
  try {
    await producer.send({ topic: `alice.${cfg.prefix}-private`, messages: [{ value: 'not yours' }] })
    return { sent: true }
  } catch (e) {
    return { error: e.name, type: typeOf(e) }
  } finally {
    await producer.disconnect()
  }
}

async function main () {
  for (const s of cfg.scenarios) {
    current = s
    const t0 = Date.now()
    try {
      out({ scenario: s, result: await scenarios[s](), ms: Date.now() - t0 })
    } catch (e) {
      out({ scenario: s, error: { name: e.name, type: typeOf(e), message: e.message, stack: e.stack }, ms: Date.now() - t0 })
    }
  }
  current = null
}

main().then(() => process.exit(0), e => { out({ fatal: String(e && e.stack) }); process.exit(1) })
