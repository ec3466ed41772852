// fencepost_wire.mjs: the wire of fencepost's conformance protocol, version 1, in one file.
//
// What it is for. `fencepost conform -- CMD` runs your implementation (the SUT) and
// talks JSON Lines with it (docs/conformance-protocol.md). This module does every part
// of that conversation that is not a decision, so that your program holds only the
// decisions: one handler per request kind (compare, merge, publish, ingest, sync).
// It is the Node.js twin of fencepost_wire.py (same guarantees, same names).
//
// What it guarantees (each is a rule of docs/conformance-protocol.md or docs/conformance.md):
//
//   - framing: one JSON object per line, UTF-8, "\n"-ended; nothing but protocol
//     messages on stdout (log with log(), which writes to stderr);
//   - strict reading: a line that is not UTF-8, not JSON, not an object, or holds a
//     duplicate key is answered {"type": "error", "id": null, ...} and the process
//     keeps running. Objects are read as null-prototype objects (a key "__proto__" is
//     data), or as Maps with {maps: true};
//   - exact integers: JavaScript numbers hold integers exactly only up to 2^53, so by
//     default the SUT declares "integers": "int53" and the harness sends nothing larger;
//     with {bigint: true} every integer is read as a BigInt and any size is accepted.
//     A number with a fraction or an exponent is read as a JsonFloat, never as an
//     integer (a float is never a coordinate). BigInts are written exactly;
//   - the handshake: hello (protocol 1 only) is answered hello_ok with your name, the
//     levels of the handlers you registered, and the optional integers, capabilities
//     ("reset" when you give onReset) and delivery fields;
//   - requests: the exact top-level fields of each known request kind are checked (a
//     missing or unknown field is an error carrying the request's id); the object your
//     handler returns (or resolves to) is sent as "<kind>_ok" with the request's id;
//   - calls: `await calls.call(op, fields)` sends {"type": "call", "call_id", "op", ...}
//     and resolves to the harness's reply after checking it answers that call;
//   - errors: a handler that throws Refuse (bad input) answers an error with the
//     request's id; any other exception is logged with its stack to stderr and also
//     answered as an error, so the harness reports it (sut_error) instead of a hang;
//   - shutdown (at any moment, even while a call waits for its reply) and end of input
//     exit with status 0; reset calls onReset and answers reset_ok.
//
// Node.js 18 or later, no dependencies. Usage:
//
//   import { Sut, Refuse } from './fencepost_wire.mjs';
//   const sut = new Sut({ name: 'my-impl' });
//   sut.handler('compare', (msg, calls) => {
//     if (msg.a !== null && !['before', 'through'].includes(msg.a.kind)) {
//       throw new Refuse('compare.a.kind', 'must be before or through');
//     }
//     return { result: 0 };         // sent as {"type":"compare_ok","id":...,"result":0}
//   });
//   sut.handler('publish', async (msg, calls) => {
//     const reply = await calls.call('read_publication', { stream: msg.stream });
//     ...
//   });
//   sut.run();
//
// Cost: one parse and one stringify per message, in plain JavaScript (JSON.parse
// cannot refuse duplicate keys or keep large integers exact).

export const PROTOCOL = 1;

// The top-level fields of every request kind of protocol 1, and the level it belongs to.
export const REQUESTS = {
  compare: ['algebra', ['type', 'id', 'order', 'a', 'b']],
  merge: ['algebra', ['type', 'id', 'membership', 'checkpoints']],
  publish: ['publisher', ['type', 'id', 'worker', 'stream', 'policy']],
  ingest: ['checkpointer', ['type', 'id', 'worker', 'partition', 'scope', 'epoch', 'order']],
  sync: ['sync', ['type', 'id', 'worker', 'now', 'source']],
};

// Throw in a handler to refuse bad input: an error with the request's id, "<path>: <problem>".
export class Refuse extends Error {
  constructor(path, problem) {
    super(`${path}: ${problem}`);
    this.path = path;
    this.problem = problem;
  }
}

class ProtocolBreak extends Error {}

// A JSON number with a fraction or an exponent: kept apart from integers.
export class JsonFloat {
  constructor(text) {
    this.text = text;
    this.value = Number(text);
  }
}

// True for an integer as read from the wire (a number or a BigInt; never a bool).
export function isInt(v) {
  return typeof v === 'bigint' || Number.isInteger(v);
}

const get = (obj, key) => (obj instanceof Map ? obj.get(key) : obj[key]);
const keys = (obj) => (obj instanceof Map ? [...obj.keys()] : Object.keys(obj));
const isObject = (v) => v instanceof Map || (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof JsonFloat));

// `value` as an object with exactly the `required` keys (plus any `optional`); Refuse otherwise.
export function checkFields(value, path, required, optional = []) {
  if (!isObject(value)) throw new Refuse(path, 'must be an object');
  const present = keys(value);
  for (const k of [...required].sort()) {
    if (!present.includes(k)) throw new Refuse(`${path}.${k}`, 'is missing');
  }
  for (const k of present) {
    if (!required.includes(k) && !optional.includes(k)) {
      throw new Refuse(`${path}.${k}`, 'is not a field of this message');
    }
  }
  return value;
}

export function log(...parts) {
  process.stderr.write(parts.join(' ') + '\n');
}

// ---------------------------------------------------------------- strict JSON
const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const ESCAPES = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

// Parse one JSON text strictly; throws SyntaxError naming the offset.
export function parse(text, { bigint = false, maps = false } = {}) {
  let i = 0;
  const fail = (what) => { throw new SyntaxError(`${what} at offset ${i}`); };
  const ws = () => { while (' \t\n\r'.includes(text[i]) && i < text.length) i++; };
  const literal = (word, v) => { if (!text.startsWith(word, i)) fail('unexpected character'); i += word.length; return v; };
  function value(depth) {
    if (depth > 512) fail('nesting too deep');
    ws();
    const c = text[i];
    if (c === '{') return object(depth);
    if (c === '[') return array(depth);
    if (c === '"') return string();
    if (c === 't') return literal('true', true);
    if (c === 'f') return literal('false', false);
    if (c === 'n') return literal('null', null);
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail(i >= text.length ? 'unexpected end of input' : 'unexpected character');
    i += m[0].length;
    if (m[2] !== undefined || m[3] !== undefined) return new JsonFloat(m[0]);
    return bigint ? BigInt(m[0]) : Number(m[0]);
  }
  function object(depth) {
    i++;
    const out = maps ? new Map() : Object.create(null);
    ws();
    if (text[i] === '}') { i++; return out; }
    for (;;) {
      ws();
      if (text[i] !== '"') fail('expected a string key');
      const key = string();
      if (maps ? out.has(key) : key in out) fail(`duplicate key ${JSON.stringify(key)}`);
      ws();
      if (text[i++] !== ':') fail('expected ":"');
      const v = value(depth + 1);
      if (maps) out.set(key, v); else out[key] = v;
      ws();
      const c = text[i++];
      if (c === '}') return out;
      if (c !== ',') fail('expected "," or "}"');
    }
  }
  function array(depth) {
    i++;
    const out = [];
    ws();
    if (text[i] === ']') { i++; return out; }
    for (;;) {
      out.push(value(depth + 1));
      ws();
      const c = text[i++];
      if (c === ']') return out;
      if (c !== ',') fail('expected "," or "]"');
    }
  }
  function string() {
    i++;
    let out = '';
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text[i];
      if (c === '"') { i++; return out; }
      if (c.charCodeAt(0) < 0x20) fail('raw control character in string');
      if (c !== '\\') { out += c; i++; continue; }
      const e = text[i + 1];
      if (e === 'u') {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
        out += String.fromCharCode(parseInt(hex, 16)); // a pair of escapes joins into one code point
        i += 6;
      } else if (e in ESCAPES) {
        out += ESCAPES[e];
        i += 2;
      } else fail('bad escape');
    }
  }
  const v = value(0);
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}

// Serialize plain objects, Maps, arrays, strings, BigInts, safe integers, JsonFloats,
// booleans, null.
export function stringify(v) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'bigint': return v.toString();
    case 'number':
      if (!Number.isSafeInteger(v)) throw new TypeError(`refusing to send the number ${v}`);
      return String(v);
    case 'string': return JSON.stringify(v);
    case 'boolean': return String(v);
    case 'object': {
      if (v instanceof JsonFloat) return v.text;
      if (Array.isArray(v)) return '[' + v.map(stringify).join(',') + ']';
      const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
      return '{' + entries.map(([k, x]) => JSON.stringify(k) + ':' + stringify(x)).join(',') + '}';
    }
    default: throw new TypeError(`cannot send a ${typeof v}`);
  }
}

// ---------------------------------------------------------------- framing
// Lines are split on "\n" as bytes, then decoded as strict UTF-8.
export class Wire {
  constructor({ input = process.stdin, bigint = false, maps = false } = {}) {
    this.options = { bigint, maps };
    this.pending = [];
    this.lines = [];
    this.waiting = null;
    this.ended = false;
    this.decoder = new TextDecoder('utf-8', { fatal: true });
    input.on('data', (chunk) => this.push(chunk));
    input.on('end', () => { this.ended = true; this.wake(); });
  }
  push(chunk) {
    let start = 0;
    for (let k = chunk.indexOf(0x0a); k !== -1; k = chunk.indexOf(0x0a, start)) {
      this.pending.push(chunk.subarray(start, k));
      this.lines.push(Buffer.concat(this.pending));
      this.pending = [];
      start = k + 1;
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
    this.wake();
  }
  wake() {
    if (this.waiting && (this.lines.length || this.ended)) {
      const w = this.waiting;
      this.waiting = null;
      w();
    }
  }
  send(message) {
    process.stdout.write(stringify(message) + '\n'); // synchronous on a pipe: nothing lost at exit
  }
  // The next well-formed message; malformed lines are answered and skipped;
  // shutdown or end of input exits with status 0.
  async receive() {
    for (;;) {
      while (!this.lines.length) {
        if (this.ended) process.exit(0);
        await new Promise((resolve) => { this.waiting = resolve; });
      }
      let message;
      try {
        message = parse(this.decoder.decode(this.lines.shift()), this.options);
        if (!isObject(message)) throw new SyntaxError('a message must be a JSON object');
      } catch (e) {
        if (!(e instanceof SyntaxError || e instanceof TypeError)) throw e;
        this.send({ type: 'error', id: null, message: `cannot parse: ${e.message}` });
        continue;
      }
      if (get(message, 'type') === 'shutdown') process.exit(0);
      return message;
    }
  }
}

// The calls of one request in progress. Call ids are "c1", "c2"... per request.
export class Calls {
  constructor(wire, request) {
    this.wire = wire;
    this.request = request;
    this.count = 0;
  }
  // Send one call; resolves to the reply ({type: "reply", call_id, ok, ...}). Check
  // reply.ok; a failed call carries error ("timeout": lost response; "conflict").
  async call(op, fields = {}) {
    const callId = `c${++this.count}`;
    this.wire.send({ type: 'call', call_id: callId, op, ...fields });
    const reply = await this.wire.receive();
    if (get(reply, 'type') !== 'reply' || get(reply, 'call_id') !== callId) {
      throw new ProtocolBreak(`expected the reply to call ${callId}, got ${stringify(reply).slice(0, 200)}`);
    }
    if (typeof get(reply, 'ok') !== 'boolean') throw new ProtocolBreak(`reply to ${callId}: ok must be true or false`);
    if (!get(reply, 'ok') && typeof get(reply, 'error') !== 'string') {
      throw new ProtocolBreak(`reply to ${callId}: a failed reply names its error`);
    }
    return reply;
  }
}

// One SUT process (one worker): register handlers, then run().
//   name       the name sent in hello_ok
//   levels     levels to declare (default: those of the registered handlers, in order)
//   integers   "int53" (default unless bigint), "int64" or "arbitrary"; null sends none
//   bigint     read every integer as a BigInt (then integers defaults to none: any size)
//   maps       read objects as Maps instead of null-prototype objects
//   delivery   sent in hello_ok when given (level sync)
//   onReset    declare the reset capability; called on reset, it must forget everything
//              the handlers keep between requests
export class Sut {
  constructor({ name, levels = null, integers, bigint = false, maps = false, delivery = null, onReset = null, input } = {}) {
    if (typeof name !== 'string') throw new TypeError('Sut: give a name: new Sut({ name: "my-impl" })');
    this.name = name;
    this.levels = levels;
    this.integers = integers === undefined ? (bigint ? null : 'int53') : integers;
    this.delivery = delivery;
    this.onReset = onReset;
    this.maps = maps;
    this.wire = new Wire({ input, bigint, maps });
    this.handlers = new Map();
  }

  // fn(msg, calls) -> answer fields (or a Promise of them) for requests of `kind`;
  // `level` defaults to the kind's level in protocol 1.
  handler(kind, levelOrFn, maybeFn) {
    const fn = typeof levelOrFn === 'function' ? levelOrFn : maybeFn;
    const level = typeof levelOrFn === 'string' ? levelOrFn : REQUESTS[kind]?.[0];
    if (!level) throw new TypeError(`unknown request kind ${kind}: name its level`);
    this.handlers.set(kind, [level, fn]);
    return fn;
  }

  helloOk() {
    const levels = this.levels ?? [...new Set([...this.handlers.values()].map(([level]) => level))];
    const ok = { type: 'hello_ok', protocol: PROTOCOL, name: this.name, levels };
    if (this.integers) ok.integers = this.integers;
    if (this.onReset) ok.capabilities = ['reset'];
    if (this.delivery) ok.delivery = this.delivery;
    return ok;
  }

  // The answer to one message read while idle (a request, hello or reset).
  async answer(msg) {
    const kind = get(msg, 'type');
    const rid = isInt(get(msg, 'id')) ? get(msg, 'id') : null;
    try {
      if (kind === 'hello') {
        checkFields(msg, 'hello', ['type', 'protocol']);
        if (!isInt(get(msg, 'protocol')) || Number(get(msg, 'protocol')) !== PROTOCOL) {
          throw new Refuse('hello.protocol', `only protocol ${PROTOCOL} is spoken`);
        }
        return this.helloOk();
      }
      if (kind === 'reset' && this.onReset) {
        checkFields(msg, 'reset', ['type']);
        await this.onReset();
        return { type: 'reset_ok' };
      }
      if (typeof kind !== 'string' || !this.handlers.has(kind)) {
        throw new Refuse('type', `no handler for message type ${stringify(kind ?? null)}`);
      }
      if (kind in REQUESTS) checkFields(msg, kind, REQUESTS[kind][1]);
      if (rid === null) throw new Refuse(`${kind}.id`, 'must be an integer');
      const fields = await this.handlers.get(kind)[1](msg, new Calls(this.wire, msg));
      const out = fields instanceof Map ? Object.fromEntries(fields) : fields;
      return { type: `${kind}_ok`, id: rid, ...out };
    } catch (e) {
      if (e instanceof Refuse) return { type: 'error', id: rid, message: e.message };
      if (e instanceof ProtocolBreak) return { type: 'error', id: rid, message: `protocol: ${e.message}` };
      log(`internal error: ${e && e.stack}`);
      return { type: 'error', id: rid, message: `internal error: ${e}` };
    }
  }

  // Serve until shutdown or end of input, then exit with status 0.
  async run() {
    for (;;) {
      const msg = await this.wire.receive();
      const answer = await this.answer(msg);
      try {
        this.wire.send(answer);
      } catch (e) { // an answer that is not JSON (undefined, a float...): say so, keep running
        const rid = isInt(get(msg, 'id')) ? get(msg, 'id') : null;
        log(`internal error: cannot send ${answer && answer.type}: ${e.message}`);
        this.wire.send({ type: 'error', id: rid, message: `internal error: ${e.message}` });
      }
    }
  }
}
