'use strict';
// The cut algebra: docs/semantics.md sections 1, 2 and 4.
//
// A cut is null (nothing: no coverage certified) or {at, kind} with kind
// "before" (the downset {p : p < at}) or "through" (the downset {p : p <= at}).
// Cuts are compared by downset, never by coordinate alone:
//   - before x < through x (same coordinate: through also covers the events at x);
//   - for x < y, through x < before y, EXCEPT on an integer order with an exact
//     successor (offsets) when y = x + 1: then through x == before y, the same
//     claim written two ways;
//   - nothing is below every other cut (even `before ""` on strings, and any
//     integer cut: integers have no least element).
// No other successor is ever manufactured: on an integer order without an
// exact successor (truncated timestamps) and on strings, the order is dense.

const { InvalidValue } = require('./values');

// Check that a coordinate fits its order: integers are BigInts, strings strings.
function coordinate(order, at, path) {
  if (order.kind === 'integer' && typeof at !== 'bigint') {
    throw new InvalidValue(path, `order ${JSON.stringify(order.name)} has integer coordinates, got a ${typeof at}`);
  }
  if (order.kind === 'string' && typeof at !== 'string') {
    throw new InvalidValue(path, `order ${JSON.stringify(order.name)} has string coordinates, got an integer`);
  }
  return at;
}

// Unicode strings compared by code point (docs/semantics.md section 1).
// JavaScript's `<` compares UTF-16 code units, which puts U+10000..U+10FFFF
// (stored as surrogates 0xD800..0xDFFF) BELOW U+E000..U+FFFF: wrong here.
// A lone surrogate (possible in JSON through \uD800) counts as its own code
// point, as in Python.
function compareCodePoints(a, b) {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i);
    const y = b.codePointAt(j);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const restA = i < a.length;
  const restB = j < b.length;
  return restA === restB ? 0 : restA ? 1 : -1;
}

function makeAlgebra(bugs) {
  function compareCoordinates(order, x, y) {
    if (order.kind === 'string') {
      if (bugs.has('utf16')) return x < y ? -1 : x > y ? 1 : 0;
      return compareCodePoints(x, y);
    }
    if (bugs.has('number')) { x = Number(x); y = Number(y); }
    return x < y ? -1 : x > y ? 1 : 0;
  }

  // Is the order one where through x == before x+1 (an exact successor)?
  function exactSuccessor(order) {
    if (bugs.has('epsilon')) return order.kind === 'integer'; // BUG: a timestamp has no successor
    return order.kind === 'integer' && order.successor === true;
  }

  // compare(order, a, b) -> -1 | 0 | 1, by downset.
  function compare(order, a, b, path = 'cut') {
    if (a === null || b === null) {
      if (a !== null) coordinate(order, a.at, `${path}.a.at`);
      if (b !== null) coordinate(order, b.at, `${path}.b.at`);
      return a === b ? 0 : a === null ? -1 : 1;
    }
    coordinate(order, a.at, `${path}.a.at`);
    coordinate(order, b.at, `${path}.b.at`);
    if (exactSuccessor(order)) {
      // Normalize both to "before": through x is before x+1. Exact in BigInt.
      const ka = a.kind === 'through' ? (bugs.has('number') ? Number(a.at) + 1 : a.at + 1n) : a.at;
      const kb = b.kind === 'through' ? (bugs.has('number') ? Number(b.at) + 1 : b.at + 1n) : b.at;
      return compareCoordinates(order, ka, kb);
    }
    // Dense order: coordinate first, then before < through at one coordinate.
    const c = compareCoordinates(order, a.at, b.at);
    if (c !== 0) return c;
    if (bugs.has('kind-blind')) return 0; // BUG: before x is not through x
    const rank = (k) => (k === 'before' ? 0 : 1);
    return Math.sign(rank(a.kind) - rank(b.kind));
  }

  // merge(membership, checkpoints) -> {frontier: cut} | {withheld: reason}
  // docs/semantics.md section 4. Checkpoints of non-members are ignored
  // (section 8: a removed partition must not pin the frontier); two
  // checkpoints for one member are a bad value.
  function merge(membership, checkpoints) {
    const byMember = new Map();
    checkpoints.forEach((c, k) => {
      if (!membership.partitions.has(c.partition)) return; // not a member: ignored
      if (byMember.has(c.partition)) {
        throw new InvalidValue(`checkpoints[${k}].partition`, `a second checkpoint for member ${JSON.stringify(c.partition)}`);
      }
      // A coordinate that does not fit the member's order is malformed input.
      if (c.cut !== null) {
        coordinate(membership.orders.get(membership.partitions.get(c.partition)), c.cut.at, `checkpoints[${k}].cut.at`);
      }
      byMember.set(c.partition, c);
    });
    const members = [...membership.partitions.keys()];
    const vector = members.map((p) => byMember.get(p)).filter((c) => c !== undefined);

    // The reasons, checked in this order (section 4).
    const checks = [
      // 1. A partition is never skipped because it is idle or empty.
      ['missing_checkpoint', () => !bugs.has('skip-missing') && members.some((p) => !byMember.has(p))],
      ['epoch_mismatch', () => !bugs.has('epoch-blind') && vector.some((c) => c.epoch !== membership.epoch)],
      ['scope_mismatch', () => !bugs.has('scope-blind') && vector.some((c) => c.scope !== membership.scope)],
      ['unsupported_finality', () => !bugs.has('provisional-ok') && vector.some((c) => c.finality !== 'final')],
      // 5. Orders with different names are incomparable: keep the vector, no scalar.
      ['incomparable', () => new Set(members.map((p) => membership.partitions.get(p))).size > 1],
    ];
    if (bugs.has('reason-order')) [checks[1], checks[2]] = [checks[2], checks[1]]; // BUG
    for (const [reason, applies] of checks) {
      if (applies()) return { withheld: reason };
    }

    // 6. The frontier is the minimum over the WHOLE vector, published exactly
    // as certified (one of the certified cuts, never rebuilt). When equivalent
    // cuts tie (through x and before x+1 on offsets), publish the one with the
    // smaller coordinate, through x (section 8): deterministic, independent
    // of partition names.
    if (vector.length === 0) return { withheld: 'no_coverage' }; // no partitions at all
    const order = membership.orders.get(membership.partitions.get(members[0]));
    let min = vector[0].cut;
    for (const c of vector.slice(1)) {
      const cut = c.cut;
      if (bugs.has('relabel')) {
        // BUG: comparing coordinates instead of cuts; the first kind met wins.
        if (min !== null && (cut === null || compareCoordinates(order, cut.at, min.at) < 0)) min = cut;
        continue;
      }
      const r = compare(order, cut, min);
      if (r < 0 || (r === 0 && cut !== null && compareCoordinates(order, cut.at, min.at) < 0)) min = cut;
    }
    if (min === null) return { withheld: 'no_coverage' };
    return { frontier: min };
  }

  // The single order of a membership whose merge gave a frontier.
  function membershipOrder(membership) {
    const names = [...new Set(membership.partitions.values())];
    return names.length === 1 ? membership.orders.get(names[0]) : null;
  }

  return { compare, merge, coordinate, membershipOrder, compareCoordinates };
}

module.exports = { makeAlgebra, compareCodePoints };
