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

import { InvalidValue } from './values.js';

// Check that a coordinate fits its order: integers are BigInts, strings strings.
export function coordinate(order, at, path) {
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
export function compareCodePoints(a, b) {
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

// The algebra is one object whose parts are looked up at call time, so that a
// deliberate bug (bugs.js) can replace exactly one part; nothing here knows of bugs.
export function makeAlgebra() {
  const A = {
    compareCoordinates(order, x, y) {
      if (order.kind === 'string') return compareCodePoints(x, y);
      return x < y ? -1 : x > y ? 1 : 0; // BigInts: exact at any size
    },

    // Is the order one where through x == before x+1 (an exact successor)?
    exactSuccessor(order) {
      return order.kind === 'integer' && order.successor === true;
    },

    // The exclusive bound of `through at` on an order with an exact successor.
    successor(at) {
      return at + 1n;
    },

    // On a dense order one coordinate ranks before x < through x.
    KIND_RANK: { before: 0, through: 1 },

    // compare(order, a, b) -> -1 | 0 | 1, by downset.
    compare(order, a, b, path = 'cut') {
      if (a === null || b === null) {
        if (a !== null) coordinate(order, a.at, `${path}.a.at`);
        if (b !== null) coordinate(order, b.at, `${path}.b.at`);
        return a === b ? 0 : a === null ? -1 : 1;
      }
      coordinate(order, a.at, `${path}.a.at`);
      coordinate(order, b.at, `${path}.b.at`);
      if (A.exactSuccessor(order)) {
        // Normalize both to "before": through x is before x+1.
        const ka = a.kind === 'through' ? A.successor(a.at) : a.at;
        const kb = b.kind === 'through' ? A.successor(b.at) : b.at;
        return A.compareCoordinates(order, ka, kb);
      }
      // Dense order: coordinate first, then before < through at one coordinate.
      const c = A.compareCoordinates(order, a.at, b.at);
      if (c !== 0) return c;
      return Math.sign(A.KIND_RANK[a.kind] - A.KIND_RANK[b.kind]);
    },

    // The withheld reasons of section 4, checked in this order across the whole
    // vector: (membership, members, byMember, vector) -> does the reason apply?
    REASONS: [
      // 1. A partition is never skipped because it is idle or empty.
      ['missing_checkpoint', (m, members, byMember) => members.some((p) => !byMember.has(p))],
      ['epoch_mismatch', (m, members, byMember, vector) => vector.some((c) => c.epoch !== m.epoch)],
      ['scope_mismatch', (m, members, byMember, vector) => vector.some((c) => c.scope !== m.scope)],
      ['unsupported_finality', (m, members, byMember, vector) => vector.some((c) => c.finality !== 'final')],
      // 5. Orders with different names are incomparable: keep the vector, no scalar.
      ['incomparable', (m, members) => new Set(members.map((p) => m.partitions.get(p))).size > 1],
    ],

    // The frontier is the minimum over the WHOLE vector, published exactly as
    // certified (one of the certified cuts, never rebuilt). When equivalent cuts
    // tie (through x and before x+1 on offsets), publish the one with the
    // smaller coordinate, through x (section 8): deterministic, independent of
    // partition names. null (nothing) is below everything.
    lowest(order, cuts) {
      let min = cuts[0];
      for (const cut of cuts.slice(1)) {
        const r = A.compare(order, cut, min);
        if (r < 0 || (r === 0 && cut !== null && A.compareCoordinates(order, cut.at, min.at) < 0)) min = cut;
      }
      return min;
    },

    // merge(membership, checkpoints) -> {frontier: cut} | {withheld: reason}
    // docs/semantics.md section 4. Checkpoints of non-members are ignored
    // (section 8: a removed partition must not pin the frontier); two
    // checkpoints for one member are a bad value.
    merge(membership, checkpoints) {
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
      for (const [reason, applies] of A.REASONS) {
        if (applies(membership, members, byMember, vector)) return { withheld: reason };
      }
      if (vector.length === 0) return { withheld: 'no_coverage' }; // no partitions at all
      const order = membership.orders.get(membership.partitions.get(members[0]));
      const min = A.lowest(order, vector.map((c) => c.cut));
      if (min === null) return { withheld: 'no_coverage' };
      return { frontier: min };
    },

    // The single order of a membership whose merge gave a frontier.
    membershipOrder(membership) {
      const names = [...new Set(membership.partitions.values())];
      return names.length === 1 ? membership.orders.get(names[0]) : null;
    },

    coordinate,
  };
  return A;
}
