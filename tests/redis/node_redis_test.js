#!/usr/bin/env node
// node-redis 4 (Debian's node-redis) against a 3-node `shardkv cluster up` cluster.
//
// What a node-redis user types: SET, GET, INCR, DEL, EXPIRE, TTL through the plain client and
// through createCluster; then SCAN both ways (design.md "Scans"): the plain client's
// scanIterator on one node returns every key once (node-redis 4 reads the cursor as a JS number:
// shardkv's cursors fit in 53 bits, so it comes back exact), and createCluster with its node
// connections named "shardkv-cluster" (the node-scoped opt-in), iterating each master's
// scanIterator, returns each key once in the union.
//
// Run by CTest (label multiprocess) as
//   node node_redis_test.js --shardkv PATH --shardkv-node PATH
// with NODE_PATH reaching Debian's node modules. Exit 0 passed, 1 failed, 77 skipped (the redis
// module is missing), 2 bad usage.
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const SKIP = 77;
const CLI_TIMEOUT_MS = 120000;
const KEYS = 500;

let redis;
try {
  redis = require('redis');
} catch (e) {
  console.log(`SKIPPED: the Node module 'redis' is missing (${e.code || e.message}): install ` +
              "Debian's node-redis (tools/install-deps.sh) and run with NODE_PATH reaching it");
  process.exit(SKIP);
}

const failures = [];
function check(cond, what) {
  console.log(`  ${cond ? 'ok  ' : 'FAIL'}  ${what}`);
  if (!cond) failures.push(what);
  return cond;
}

function parseArgs() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i + 1 < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const name of ['shardkv', 'shardkv-node']) {
    if (!out[name]) {
      console.error(`usage: node_redis_test.js --shardkv PATH --shardkv-node PATH`);
      process.exit(2);
    }
    out[name] = path.resolve(out[name]);
  }
  return out;
}

class Cluster {
  constructor(cli, nodeBin) {
    this.cli = cli;
    this.env = Object.assign({}, process.env, {SHARDKV_NODE_BIN: nodeBin});
    this.dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'shardkv-node-redis-'));
  }
  run(...args) {
    const r = childProcess.spawnSync(this.cli, [...args, '--dir', this.dir],
                                     {env: this.env, encoding: 'utf8', timeout: CLI_TIMEOUT_MS,
                                      stdio: ['ignore', 'pipe', 'pipe']});
    if (r.status !== 0) {
      throw new Error(`shardkv ${args.join(' ')}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
    }
    return r.stdout;
  }
  redisPorts() {
    const status = JSON.parse(this.run('cluster', 'status', '--json'));
    return status.nodes.filter((n) => n.redis_address)
        .map((n) => Number(n.redis_address.slice(n.redis_address.lastIndexOf(':') + 1)));
  }
  close() {
    try {
      this.run('cluster', 'down', '--wait', '10');
    } catch (e) {
      console.log(`cluster down: ${e.message}`);
    }
    // Nothing may outlive the test: kill what `cluster down` left.
    for (const name of fs.readdirSync(this.dir)) {
      try {
        process.kill(Number(fs.readFileSync(path.join(this.dir, name, 'pid'), 'utf8')), 'SIGKILL');
      } catch (e) {
        // no pid file, or the process is gone
      }
    }
    fs.rmSync(this.dir, {recursive: true, force: true});
  }
}

function counted(keys) {
  const seen = new Map();
  for (const k of keys) seen.set(k, (seen.get(k) || 0) + 1);
  const missing = [];
  for (let i = 0; i < KEYS; ++i) if (!seen.has(`nr:${i}`)) missing.push(`nr:${i}`);
  const repeated = [...seen.values()].filter((n) => n > 1).length;
  return {total: keys.length, distinct: seen.size, missing: missing.length, repeated};
}

async function testPlain(ports) {
  console.log('plain client (createClient) on one node');
  const c = redis.createClient({socket: {host: '127.0.0.1', port: ports[0]}});
  c.on('error', () => {});
  await c.connect();
  check(await c.set('nr:user:1', 'alice') === 'OK', 'SET');
  check(await c.get('nr:user:1') === 'alice', 'GET');
  check(await c.incr('nr:n') === 1 && await c.incrBy('nr:n', 4) === 5, 'INCR, INCRBY');
  check(await c.hSet('nr:h:1', {name: 'ann', age: '41'}) === 2, 'HSET of a user record');
  const user = await c.hGetAll('nr:h:1');
  check(user.name === 'ann' && user.age === '41', 'HGETALL');
  check(await c.sAdd('nr:tags:1', ['red', 'blue', 'red']) === 2, 'SADD of tags');
  const tags = (await c.sMembers('nr:tags:1')).sort();
  check(tags.length === 2 && tags[0] === 'blue' && tags[1] === 'red', 'SMEMBERS');
  check(await c.sRem('nr:tags:1', 'red') === 1 && await c.sIsMember('nr:tags:1', 'blue'),
        'SREM, SISMEMBER');
  check(await c.del(['nr:h:1', 'nr:tags:1']) === 2, 'DEL of a hash and a set');
  check(await c.expire('nr:user:1', 100) === true, 'EXPIRE');
  const ttl = await c.ttl('nr:user:1');
  check(ttl > 90 && ttl <= 100, `TTL ${ttl}`);
  check(await c.del(['nr:user:1', 'nr:n']) === 2, 'DEL of two keys');
  check(await c.get('nr:user:1') === null, 'GET after DEL is null');

  const kv = [];
  for (let i = 0; i < KEYS; ++i) kv.push([`nr:${i}`, `v${i}`]);
  check(await c.mSet(kv) === 'OK', `MSET of ${KEYS} keys`);
  // scanIterator reads each cursor with Number(): a cursor above 2^53 would come back rounded.
  const keys = [];
  let cursor = 0;
  let unsafe = 0;
  for (let calls = 0; calls < 10000; ++calls) {
    const reply = await c.scan(cursor, {COUNT: 20});
    if (!Number.isSafeInteger(reply.cursor)) ++unsafe;
    keys.push(...reply.keys);
    cursor = reply.cursor;
    if (cursor === 0) break;
  }
  check(cursor === 0 && unsafe === 0, `SCAN cursors all exact as JS numbers (${unsafe} not)`);
  const viaScan = counted(keys);
  check(viaScan.missing === 0 && viaScan.repeated === 0 && viaScan.distinct === KEYS,
        `SCAN by hand: ${JSON.stringify(viaScan)}`);
  const iterated = [];
  for await (const k of c.scanIterator({COUNT: 20})) iterated.push(k);
  const viaIterator = counted(iterated);
  check(viaIterator.missing === 0 && viaIterator.repeated === 0 && viaIterator.distinct === KEYS,
        `scanIterator on one node: ${JSON.stringify(viaIterator)}`);
  await c.quit();
}

async function scanMasters(cluster) {
  const keys = [];
  for (const master of cluster.getMasters()) {
    for await (const k of master.client.scanIterator({COUNT: 20})) keys.push(k);
  }
  return keys;
}

async function testCluster(ports) {
  console.log('cluster client (createCluster) over the emulated slot table');
  const cluster = redis.createCluster({
    rootNodes: [{socket: {host: '127.0.0.1', port: ports[1]}}],
    // The node-scoped opt-in: every node connection is named shardkv-cluster...
    defaults: {name: 'shardkv-cluster:node-redis-test'},
  });
  cluster.on('error', () => {});
  await cluster.connect();
  check(cluster.getMasters().length === ports.length,
        `${cluster.getMasters().length} masters, one per node`);
  check(await cluster.set('nrc:a', '1') === 'OK' && await cluster.get('nrc:a') === '1',
        'SET and GET through the cluster');
  check(await cluster.incr('nrc:n') === 1 && await cluster.incr('nrc:n') === 2, 'INCR');
  check(await cluster.hSet('nrc:h', 'f', 'v') === 1 && await cluster.hGet('nrc:h', 'f') === 'v',
        'HSET and HGET');
  check(await cluster.sAdd('nrc:s', ['a', 'b']) === 2 && await cluster.sCard('nrc:s') === 2,
        'SADD and SCARD');
  check(await cluster.del('nrc:h') === 1 && await cluster.del('nrc:s') === 1, 'DEL of both');
  check(await cluster.expire('nrc:a', 50) === true, 'EXPIRE');
  const ttl = await cluster.ttl('nrc:a');
  check(ttl > 40 && ttl <= 50, `TTL ${ttl}`);
  check(await cluster.del('nrc:a') === 1 && await cluster.del('nrc:n') === 1, 'DEL');
  check(await cluster.get('nrc:a') === null, 'GET after DEL is null');

  const union = counted(await scanMasters(cluster));
  check(union.missing === 0 && union.repeated === 0 && union.total === KEYS,
        `each master's scanIterator, node-scoped: ${JSON.stringify(union)}`);
  await cluster.quit();

  // Without the opt-in, every node scans the whole cluster: each key once per master
  // (documented in docs/redis.md, "SCAN with cluster clients").
  const unnamed = redis.createCluster({rootNodes: [{socket: {host: '127.0.0.1', port: ports[2]}}]});
  unnamed.on('error', () => {});
  await unnamed.connect();
  const all = counted(await scanMasters(unnamed));
  check(all.missing === 0 && all.total === KEYS * ports.length,
        `each master's scanIterator without the opt-in: ${JSON.stringify(all)}`);
  await unnamed.quit();
}

async function main() {
  const args = parseArgs();
  for (const p of [args.shardkv, args['shardkv-node']]) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
    } catch (e) {
      console.error(`${p}: not an executable file`);
      return 2;
    }
  }
  console.log(`node-redis (@redis/client ${require('@redis/client/package.json').version}), ` +
              `node ${process.version}`);
  const cluster = new Cluster(args.shardkv, args['shardkv-node']);
  running = cluster;
  try {
    cluster.run('cluster', 'up', '--nodes', '3', '--base-port', '0', '--wait', '60');
    const ports = cluster.redisPorts();
    if (!check(ports.length === 3, `three Redis listeners: ${ports}`)) return 1;
    await testPlain(ports);
    await testCluster(ports);
  } catch (e) {
    console.log(e.stack || String(e));
    failures.push(`exception: ${e.message}`);
  } finally {
    running = null;
    cluster.close();
  }
  if (failures.length) {
    console.log(`FAILED: ${failures.length} check(s):\n  ${failures.join('\n  ')}`);
    return 1;
  }
  console.log('PASSED');
  return 0;
}

// A bound on the whole run: a hung client must fail the test (and stop its cluster), not stall
// CTest until its timeout.
let running = null;
const watchdog = setTimeout(() => {
  console.log('FAILED: the test did not finish within 240 s');
  if (running) running.close();
  process.exit(1);
}, 240000);
main().then((rc) => {
  clearTimeout(watchdog);
  process.exit(rc);
});
