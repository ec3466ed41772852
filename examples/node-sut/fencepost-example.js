#!/usr/bin/env node
'use strict';
// fencepost-example: an independent implementation of fencepost's conformance
// protocol, version 1 (docs/conformance-protocol.md), in Node.js with no
// dependencies. One process is one worker; it speaks JSON Lines on stdin and
// stdout and logs to stderr. All three levels are implemented:
//
//   algebra       compare and merge of cuts      lib/algebra.js
//   checkpointer  one ingest pass per `ingest`   lib/checkpointer.js
//   publisher     one attempt per `publish`      lib/publisher.js
//
// This file is the wire: framing, the handshake, dispatch, and the `call`
// helper with which the levels ask the harness (the stores, the provider,
// the network) for anything, one call at a time, each answered before the
// next. Run `node fencepost-example.js --help` for the flags.

const { parse, stringify, JsonSyntaxError } = require('./lib/json');
const V = require('./lib/values');
const { makeAlgebra } = require('./lib/algebra');
const { makePublisher } = require('./lib/publisher');
const { makeCheckpointer } = require('./lib/checkpointer');
const { CATALOG, parseBugs } = require('./lib/bugs');

const USAGE = `usage: node fencepost-example.js [options]

  --levels L             levels to declare (default algebra,checkpointer,publisher)
  --integers RANGE       declare "integers": int64 | int53 | arbitrary in hello_ok
                         (default: not sent; arbitrary sizes are handled anyway)
  --reset                declare "capabilities": ["reset"] and answer reset
  --conflict-reread      after a write conflict, issue a read_publication instead
                         of deciding from the record the conflict reply carried
  --confirm-report WHAT  cut reported with "confirmed": proposal (default) | record
  --max-writes N         conditional publication writes per attempt (default 6)
  --max-timeouts N       lost responses tolerated per request (default 8)
  --bug NAME[,NAME]      switch on a deliberate mistake (also FENCEPOST_EXAMPLE_BUG)
  --list-bugs            list the mistakes and exit
  --name NAME            name sent in hello_ok (default fencepost-example-node)
`;

// ---------------------------------------------------------------- options
function parseArgs(argv) {
  const o = {
    levels: ['algebra', 'checkpointer', 'publisher'],
    integers: null,
    reset: false,
    conflictReread: false,
    confirmReport: 'proposal',
    maxWrites: 6,
    maxTimeouts: 8,
    maxPages: 100,
    name: 'fencepost-example-node',
    bugs: [],
  };
  if (process.env.FENCEPOST_EXAMPLE_BUG) o.bugs.push(process.env.FENCEPOST_EXAMPLE_BUG);
  const value = (i, flag) => {
    if (i + 1 >= argv.length) die(`${flag} needs a value`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--levels': o.levels = value(i, a).split(',').filter(Boolean); i++; break;
      case '--integers': o.integers = value(i, a); i++;
        if (!['int64', 'int53', 'arbitrary'].includes(o.integers)) die('--integers: int64, int53 or arbitrary');
        break;
      case '--reset': o.reset = true; break;
      case '--conflict-reread': o.conflictReread = true; break;
      case '--confirm-report': o.confirmReport = value(i, a); i++;
        if (!['proposal', 'record'].includes(o.confirmReport)) die('--confirm-report: proposal or record');
        break;
      case '--max-writes': o.maxWrites = Number(value(i, a)); i++; break;
      case '--max-timeouts': o.maxTimeouts = Number(value(i, a)); i++; break;
      case '--bug': o.bugs.push(value(i, a)); i++; break;
      case '--name': o.name = value(i, a); i++; break;
      case '--list-bugs':
        for (const [k, v] of Object.entries(CATALOG)) process.stdout.write(`${k.padEnd(24)} ${v}\n`);
        process.exit(0);
        break;
      case '-h': case '--help': process.stdout.write(USAGE); process.exit(0); break;
      default: die(`unknown argument ${a}\n${USAGE}`);
    }
  }
  for (const l of o.levels) {
    if (!['algebra', 'checkpointer', 'publisher'].includes(l)) die(`unknown level ${l}`);
  }
  try { o.bugs = parseBugs(o.bugs); } catch (e) { die(e.message); }
  return o;
}

function die(msg) {
  process.stderr.write(`fencepost-example: ${msg}\n`);
  process.exit(2);
}

function log(msg) { process.stderr.write(`[fencepost-example ${process.pid}] ${msg}\n`); }

// ---------------------------------------------------------------- framing
// Lines are split on "\n" as bytes, then decoded as strict UTF-8: a line that
// is not UTF-8 or not JSON is answered {"type":"error","id":null,...}.
class LineReader {
  constructor(stream) {
    this.chunks = [];
    this.lines = [];
    this.waiting = null;
    this.ended = false;
    this.decoder = new TextDecoder('utf-8', { fatal: true });
    stream.on('data', (chunk) => this.push(chunk));
    stream.on('end', () => { this.ended = true; this.wake(); });
  }
  push(chunk) {
    let start = 0;
    for (let k = chunk.indexOf(0x0a); k !== -1; k = chunk.indexOf(0x0a, start)) {
      this.chunks.push(chunk.subarray(start, k));
      this.lines.push(Buffer.concat(this.chunks));
      this.chunks = [];
      start = k + 1;
    }
    if (start < chunk.length) this.chunks.push(chunk.subarray(start));
    this.wake();
  }
  wake() {
    if (this.waiting && (this.lines.length || this.ended)) {
      const w = this.waiting;
      this.waiting = null;
      w();
    }
  }
  // -> {value} | {bad: reason} | {eof: true}
  async next() {
    while (!this.lines.length) {
      if (this.ended) return { eof: true };
      await new Promise((resolve) => { this.waiting = resolve; });
    }
    const bytes = this.lines.shift();
    let text;
    try { text = this.decoder.decode(bytes); } catch { return { bad: 'line is not UTF-8' }; }
    try { return { value: parse(text) }; } catch (e) {
      if (e instanceof JsonSyntaxError) return { bad: `not JSON: ${e.message}` };
      throw e;
    }
  }
}

function send(obj) {
  // Writes to a pipe are synchronous in Node on Linux, so nothing is lost at exit.
  process.stdout.write(stringify(obj) + '\n');
}

function exitNow(code) {
  process.exit(code);
}

// ---------------------------------------------------------------- calls
// What a reply to each op carries (docs/conformance-protocol.md tables).
const REPLY_FIELDS = {
  read_publication: { ok: ['record'] },
  read_membership: { ok: ['membership'] },
  read_checkpoints: { ok: ['checkpoints'] },
  write_publication: { ok: ['record'], conflict: ['record'] },
  read_checkpoint: { ok: ['checkpoint'] },
  fetch_page: { ok: ['page'] },
  record_outcome: { ok: [] },
  write_checkpoint: { ok: ['checkpoint'], conflict: ['checkpoint'] },
};

class ProtocolError extends Error {}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const bugs = options.bugs;
  if (bugs.size) log(`deliberate bugs on: ${[...bugs].join(', ')}`);
  const reader = new LineReader(process.stdin);

  let callCounter = 0; // call ids: "c1", "c2", ... per process (reset by `reset`)

  // Read the next message; shutdown is honoured at any time, even mid-request.
  async function nextMessage() {
    for (;;) {
      const m = await reader.next();
      if (m.eof) exitNow(0);
      if (m.bad) { send({ type: 'error', id: null, message: m.bad }); continue; }
      const v = m.value;
      if (v instanceof Map && v.get('type') === 'shutdown') exitNow(0);
      return v;
    }
  }

  // io.call(op, fields) -> {ok, error, body}: ask the harness, wait for its reply.
  const io = {
    async call(op, fields) {
      const callId = `c${++callCounter}`;
      send({ type: 'call', call_id: callId, op, ...fields });
      const v = await nextMessage();
      if (!(v instanceof Map) || v.get('type') !== 'reply') {
        throw new ProtocolError(`expected the reply to ${callId}, got ${stringify(v).slice(0, 200)}`);
      }
      if (v.get('call_id') !== callId) throw new ProtocolError(`reply to ${stringify(v.get('call_id'))}, expected ${callId}`);
      const ok = V.bool(v.get('ok'), 'reply.ok');
      const spec = REPLY_FIELDS[op];
      if (ok) {
        V.fields(v, 'reply', ['type', 'call_id', 'ok', ...spec.ok]);
        return { ok: true, error: null, body: v };
      }
      const error = V.str(v.get('error'), 'reply.error');
      const extra = error === 'conflict' && spec.conflict ? spec.conflict : [];
      if (error !== 'timeout' && !(error === 'conflict' && spec.conflict)) {
        throw new V.InvalidValue('reply.error', `unexpected error ${JSON.stringify(error)} for ${op}`);
      }
      V.fields(v, 'reply', ['type', 'call_id', 'ok', 'error', ...extra]);
      return { ok: false, error, body: v };
    },
  };

  const algebra = makeAlgebra(bugs);
  const publisher = makePublisher({ algebra, bugs, options, io });
  const checkpointer = makeCheckpointer({ algebra, bugs, options, io });
  const levels = new Set(options.levels);

  // Each request: validate it, run it, answer it. Bad input -> error with its id.
  const handlers = {
    async hello(m) {
      V.fields(m, 'hello', ['type', 'protocol']);
      if (V.int(m.get('protocol'), 'hello.protocol') !== 1n) throw new V.InvalidValue('hello.protocol', 'only protocol 1 is spoken');
      const ok = { type: 'hello_ok', protocol: 1, name: options.name, levels: options.levels };
      if (options.integers) ok.integers = options.integers;
      if (options.reset) ok.capabilities = ['reset'];
      send(ok);
    },
    async reset(m) {
      if (!options.reset) throw new V.InvalidValue('type', 'reset was not declared (run with --reset)');
      V.fields(m, 'reset', ['type']);
      // Forget everything held in memory: a fresh process that has answered hello.
      callCounter = 0;
      publisher.reset();
      send({ type: 'reset_ok' });
    },
    async compare(m) {
      need('algebra');
      V.fields(m, 'compare', ['type', 'id', 'order', 'a', 'b']);
      const order = V.order(m.get('order'), 'compare.order');
      const a = V.cut(m.get('a'), 'compare.a');
      const b = V.cut(m.get('b'), 'compare.b');
      const result = algebra.compare(order, a, b, 'compare');
      send({ type: 'compare_ok', id: m.get('id'), result });
    },
    async merge(m) {
      need('algebra');
      V.fields(m, 'merge', ['type', 'id', 'membership', 'checkpoints']);
      const membership = V.membership(m.get('membership'), 'merge.membership');
      const checkpoints = V.list(m.get('checkpoints'), 'merge.checkpoints', V.checkpoint);
      const r = algebra.merge(membership, checkpoints);
      if (r.withheld) send({ type: 'merge_ok', id: m.get('id'), withheld: r.withheld });
      else send({ type: 'merge_ok', id: m.get('id'), frontier: V.wireCut(r.frontier) });
    },
    async publish(m) {
      need('publisher');
      V.fields(m, 'publish', ['type', 'id', 'worker', 'stream', 'policy']);
      const r = await publisher.publish(m);
      send({ type: 'publish_ok', id: m.get('id'), outcome: r.outcome, epoch: r.epoch, cut: V.wireCut(r.cut), reason: r.reason });
    },
    async ingest(m) {
      need('checkpointer');
      V.fields(m, 'ingest', ['type', 'id', 'worker', 'partition', 'scope', 'epoch', 'order']);
      const cut = await checkpointer.ingest(m);
      send({ type: 'ingest_ok', id: m.get('id'), cut: V.wireCut(cut) });
    },
  };
  function need(level) {
    if (!levels.has(level)) throw new V.InvalidValue('type', `level ${level} is not declared`);
  }

  (async () => {
    for (;;) {
      const m = await nextMessage();
      let id = null;
      try {
        if (!(m instanceof Map)) throw new V.InvalidValue('message', 'expected a JSON object');
        if (typeof m.get('id') === 'bigint') id = m.get('id');
        const type = m.get('type');
        const handler = typeof type === 'string' && Object.prototype.hasOwnProperty.call(handlers, type) ? handlers[type] : null;
        if (!handler) throw new V.InvalidValue('type', `unknown message type ${stringify(type ?? null)}`);
        if (type !== 'hello' && type !== 'reset') V.int(m.get('id'), `${type}.id`);
        await handler(m);
      } catch (e) {
        if (!(e instanceof V.InvalidValue || e instanceof ProtocolError)) {
          log(`internal error: ${e.stack}`);
        }
        send({ type: 'error', id, message: e.message });
      }
    }
  })().catch((e) => { log(`fatal: ${e.stack}`); exitNow(1); });
}

main();
