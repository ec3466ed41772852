#!/usr/bin/env node
// The smallest conformant implementation: level `algebra`, on the wire library.
//
// docs/tutorial.md walks through it part by part (in Python; this is the same program
// in Node.js 18+). The wire (framing, handshake, calls, errors, shutdown) is
// examples/wire/fencepost_wire.mjs; this file holds only the decisions of
// docs/semantics.md sections 1, 2 and 4. Check it with:
//
//   fencepost conform --levels algebra -- node examples/skeleton/skeleton.mjs
//
// Integers are JavaScript numbers, so the wire library declares "integers": "int53"
// and the harness sends no coordinate beyond 2^53 - 1.

import { Sut, Refuse, checkFields, isInt } from '../wire/fencepost_wire.mjs';

const sut = new Sut({ name: 'skeleton-node', onReset: () => {} }); // it keeps nothing

// --- Part 1: values. Refuse bad input with the field's path (docs/semantics.md section 8).

function checkOrder(order, path) {
  if (order?.kind === 'string') return checkFields(order, path, ['name', 'kind']);
  checkFields(order, path, ['name', 'kind', 'successor']);
  if (order.kind !== 'integer' || typeof order.successor !== 'boolean') {
    throw new Refuse(`${path}.kind`, 'must be integer (with a boolean successor) or string');
  }
  return order;
}

function checkCut(cut, path, order) {
  if (cut === null) return null;
  checkFields(cut, path, ['at', 'kind']);
  if (cut.kind !== 'before' && cut.kind !== 'through') {
    throw new Refuse(`${path}.kind`, `must be before or through, not ${JSON.stringify(cut.kind)}`);
  }
  if (!(order.kind === 'integer' ? isInt(cut.at) : typeof cut.at === 'string')) {
    throw new Refuse(`${path}.at`, `must be a coordinate of a ${order.kind} order`);
  }
  return cut;
}

// --- Part 2: compare cuts by their downsets (docs/semantics.md section 2).

function compareStrings(a, b) { // by code point, not by UTF-16 unit as `<` does
  const x = [...a];
  const y = [...b];
  for (let k = 0; k < Math.min(x.length, y.length); k++) {
    const d = x[k].codePointAt(0) - y[k].codePointAt(0);
    if (d !== 0) return Math.sign(d);
  }
  return Math.sign(x.length - y.length);
}

function compareCuts(a, b, order) {
  if (a === null || b === null) return (a !== null) - (b !== null); // nothing is lowest
  // With an exact successor `through x` is `before x+1`.
  const key = (c) => (order.successor && c.kind === 'through' ? [c.at + 1, 0] : [c.at, c.kind === 'before' ? 0 : 1]);
  const [xa, ea] = key(a);
  const [xb, eb] = key(b);
  const c = typeof xa === 'string' ? compareStrings(xa, xb) : Math.sign(xa - xb);
  return c !== 0 ? c : Math.sign(ea - eb);
}

sut.handler('compare', (msg) => {
  const order = checkOrder(msg.order, 'compare.order');
  const a = checkCut(msg.a, 'compare.a', order);
  const b = checkCut(msg.b, 'compare.b', order);
  return { result: compareCuts(a, b, order) };
});

// --- Part 3: merge checkpoints into one frontier, or withhold (docs/semantics.md section 4).

const CHECKPOINT = ['partition', 'cut', 'token', 'generation', 'scope', 'epoch', 'finality'];

sut.handler('merge', (msg) => {
  const path = 'merge.membership';
  const members = checkFields(msg.membership, path, ['epoch', 'scope', 'partitions', 'orders']);
  const orders = {};
  for (const [name, o] of Object.entries(members.orders)) orders[name] = checkOrder(o, `${path}.orders.${name}`);
  const vector = new Map();
  msg.checkpoints.forEach((cp, i) => {
    checkFields(cp, `merge.checkpoints[${i}]`, CHECKPOINT);
    if (!(cp.partition in members.partitions)) return; // non-members are ignored
    if (vector.has(cp.partition)) throw new Refuse(`merge.checkpoints[${i}]`, 'a second checkpoint for one member');
    checkCut(cp.cut, `merge.checkpoints[${i}].cut`, orders[members.partitions[cp.partition]]);
    vector.set(cp.partition, cp);
  });
  // The reasons, in the order of section 4, each across the whole vector.
  const cps = [...vector.values()];
  if (cps.length < Object.keys(members.partitions).length) return { withheld: 'missing_checkpoint' };
  if (cps.some((cp) => cp.epoch !== members.epoch)) return { withheld: 'epoch_mismatch' };
  if (cps.some((cp) => cp.scope !== members.scope)) return { withheld: 'scope_mismatch' };
  if (cps.some((cp) => cp.finality !== 'final')) return { withheld: 'unsupported_finality' };
  if (new Set(Object.values(members.partitions)).size > 1) return { withheld: 'incomparable' };
  if (cps.length === 0 || cps.some((cp) => cp.cut === null)) return { withheld: 'no_coverage' };
  const order = orders[Object.values(members.partitions)[0]];
  let lowest = cps[0].cut;
  for (const { cut } of cps.slice(1)) { // the minimum; ties go to the smaller coordinate (section 8)
    const c = compareCuts(cut, lowest, order);
    if (c < 0 || (c === 0 && cut.at < lowest.at)) lowest = cut;
  }
  return { frontier: lowest };
});

sut.run();
