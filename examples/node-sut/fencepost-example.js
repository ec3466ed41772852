#!/usr/bin/env node
// fencepost-example: an independent implementation of fencepost's conformance
// protocol, version 1 (docs/conformance-protocol.md), in Node.js with no
// dependencies. One process is one worker; it speaks JSON Lines on stdin and
// stdout and logs to stderr. All three levels are implemented:
//
//   algebra       compare and merge of cuts      lib/algebra.js
//   checkpointer  one ingest pass per `ingest`   lib/checkpointer.js
//   publisher     one attempt per `publish`      lib/publisher.js
//
// The wire (framing, strict parsing with exact integers, the handshake, calls,
// error replies, reset, shutdown) is examples/wire/fencepost_wire.mjs; this file
// registers a handler per request and gives the levels `io.call`, with which they
// ask the harness (the stores, the provider, the network) for anything, one call
// at a time. The deliberate bugs are a table of mutations (lib/bugs.js) applied at
// start-up; the levels never consult it. Run `node fencepost-example.js --help`.

import { Sut } from '../wire/fencepost_wire.mjs';
import * as V from './lib/values.js';
import { makeAlgebra } from './lib/algebra.js';
import { Publisher } from './lib/publisher.js';
import { Checkpointer } from './lib/checkpointer.js';
import { CATALOG, parseBugs, applyBugs } from './lib/bugs.js';

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

// io.call(op, fields) -> {ok, error, body}: ask the harness, wait for its reply,
// and check that the reply carries exactly the fields its op allows.
function makeIo() {
  let calls = null; // the calls of the request in progress (the wire library's)
  return {
    begin(c) { calls = c; },
    async call(op, fields) {
      const v = await calls.call(op, fields);
      const spec = REPLY_FIELDS[op];
      if (v.get('ok')) {
        V.fields(v, 'reply', ['type', 'call_id', 'ok', ...spec.ok]);
        return { ok: true, error: null, body: v };
      }
      const error = v.get('error');
      if (error !== 'timeout' && !(error === 'conflict' && spec.conflict)) {
        throw new V.InvalidValue('reply.error', `unexpected error ${JSON.stringify(error)} for ${op}`);
      }
      V.fields(v, 'reply', ['type', 'call_id', 'ok', 'error', ...(error === 'conflict' ? spec.conflict : [])]);
      return { ok: false, error, body: v };
    },
  };
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const io = makeIo();
  const algebra = makeAlgebra();
  if (options.bugs.size) {
    applyBugs(options.bugs, { algebra });
    log(`deliberate bugs on: ${[...options.bugs].join(', ')}`);
  }
  const publisher = new Publisher({ algebra, options, io });
  const checkpointer = new Checkpointer({ algebra, options, io });

  const sut = new Sut({
    name: options.name,
    levels: options.levels,
    integers: options.integers, // null: not sent (integers of any size are read exactly)
    bigint: true,
    maps: true,
    onReset: options.reset ? () => publisher.reset() : null,
  });
  // Each request: validate it, run it, return the answer's fields.
  const handlers = {
    algebra: {
      compare(m) {
        const order = V.order(m.get('order'), 'compare.order');
        const a = V.cut(m.get('a'), 'compare.a');
        const b = V.cut(m.get('b'), 'compare.b');
        return { result: algebra.compare(order, a, b, 'compare') };
      },
      merge(m) {
        const membership = V.membership(m.get('membership'), 'merge.membership');
        const checkpoints = V.list(m.get('checkpoints'), 'merge.checkpoints', V.checkpoint);
        const r = algebra.merge(membership, checkpoints);
        return r.withheld ? { withheld: r.withheld } : { frontier: V.wireCut(r.frontier) };
      },
    },
    publisher: {
      async publish(m, calls) {
        io.begin(calls);
        const r = await publisher.publish(m);
        return { outcome: r.outcome, epoch: r.epoch, cut: V.wireCut(r.cut), reason: r.reason };
      },
    },
    checkpointer: {
      async ingest(m, calls) {
        io.begin(calls);
        return { cut: V.wireCut(await checkpointer.ingest(m)) };
      },
    },
  };
  for (const level of options.levels) {
    for (const [kind, handle] of Object.entries(handlers[level])) sut.handler(kind, handle);
  }
  sut.run();
}

main();
