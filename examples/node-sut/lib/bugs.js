// Deliberate, switchable mistakes (`--bug NAME`, or FENCEPOST_EXAMPLE_BUG=NAME;
// several may be given, comma-separated): a table of named mutations.
//
// Each entry is a realistic error an implementer makes (README.md lists the
// property each should break) and a mutation that, applied at start-up, replaces
// one part of the correct program: a part of the algebra object, a method of
// Attempt or IngestPass, or an entry of a table. The correct code never consults
// this file, so it reads straight through; a mutation names exactly what it breaks.

import { MONOTONE, Attempt, Publisher } from './publisher.js';
import { IngestPass } from './checkpointer.js';

const swap = (list, i, j) => { [list[i], list[j]] = [list[j], list[i]]; };

// name -> [what is wrong, mutation({ algebra }) applied at start-up]
export const BUGS = {
  // algebra
  'kind-blind': ['compare ignores the endpoint kind on dense orders (before x == through x)', ({ algebra }) => {
    algebra.KIND_RANK = { before: 0, through: 0 };
  }],
  'epsilon': ['through x is treated as before x+1 on every integer order, successor or not (compare, and the ingest pass certifies before x+1)', ({ algebra }) => {
    algebra.exactSuccessor = (order) => order.kind === 'integer';
    const certifiable = IngestPass.prototype.certifiable;
    IngestPass.prototype.certifiable = function (page) {
      const cut = certifiable.call(this, page);
      if (cut !== null && cut.kind === 'through' && this.order.kind === 'integer') {
        return { at: cut.at + 1n, kind: 'before' }; // a manufactured exclusive boundary
      }
      return cut;
    };
  }],
  'utf16': ['strings compared by UTF-16 code unit (JavaScript <) instead of by code point', ({ algebra }) => {
    const correct = algebra.compareCoordinates;
    algebra.compareCoordinates = (order, x, y) => (order.kind === 'string' ? (x < y ? -1 : x > y ? 1 : 0) : correct(order, x, y));
  }],
  'number': ['integer coordinates converted to JavaScript numbers (precision lost above 2^53)', ({ algebra }) => {
    const correct = algebra.compareCoordinates;
    algebra.compareCoordinates = (order, x, y) => (order.kind === 'integer' ? correct(order, Number(x), Number(y)) : correct(order, x, y));
    algebra.successor = (at) => Number(at) + 1;
  }],
  'reason-order': ['withheld reasons checked in the wrong order (scope before epoch)', ({ algebra }) => {
    swap(algebra.REASONS, 1, 2);
  }],
  'skip-missing': ['merge skips a member that has no checkpoint instead of withholding', ({ algebra }) => {
    algebra.REASONS[0] = ['missing_checkpoint', () => false];
  }],
  'provisional-ok': ['merge trusts a provisional checkpoint; the ingest pass certifies a non-final claim', ({ algebra }) => {
    algebra.REASONS[3] = ['unsupported_finality', () => false];
    IngestPass.prototype.certifiable = (page) => (page.claim !== null ? page.claim.cut : null);
  }],
  'scope-blind': ["merge accepts another scope's checkpoints", ({ algebra }) => {
    algebra.REASONS[2] = ['scope_mismatch', () => false];
  }],
  'epoch-blind': ["merge accepts another epoch's checkpoints", ({ algebra }) => {
    algebra.REASONS[1] = ['epoch_mismatch', () => false];
  }],
  'relabel': ['merge takes the minimum by coordinate alone, keeping whichever kind it met first', ({ algebra }) => {
    algebra.lowest = (order, cuts) => {
      let min = cuts[0];
      for (const cut of cuts.slice(1)) {
        if (min !== null && (cut === null || algebra.compareCoordinates(order, cut.at, min.at) < 0)) min = cut;
      }
      return min;
    };
  }],
  // publisher
  'stale-cut-retry': ['after a conflict, retries the same cut against the new revision without recomputing', () => {
    const { next, afterConflict } = Attempt.prototype;
    Attempt.prototype.afterConflict = async function (proposal, carried) {
      this.stale = proposal;
      return afterConflict.call(this, proposal, carried);
    };
    Attempt.prototype.next = async function (record) {
      const stale = this.stale;
      this.stale = null;
      return stale ? { write: stale } : next.call(this, record); // the old cut, not recomputed
    };
  }],
  'conflict-unchanged': ['after a conflict, reports unchanged ("someone else published") without deciding from the new record', () => {
    Attempt.prototype.afterConflict = async function (proposal, carried) {
      this.shown = carried;
      return this.end('unchanged', carried.epoch, carried.cut);
    };
  }],
  'blind-success': ['a lost write response is taken as success (published)', () => {
    Attempt.prototype.afterLostWrite = async function (proposal) {
      return this.end('published', proposal.epoch, proposal.cut);
    };
  }],
  'confirm-revision': ['after a lost write, a moved revision alone is taken as confirmation', () => {
    const confirms = Attempt.prototype.confirms;
    Attempt.prototype.confirms = function (proposal, before, record) {
      return record.revision > before.revision || confirms.call(this, proposal, before, record);
    };
  }],
  'fence-blind': ['after a lost write, keeps the membership it held and retries in that epoch whatever the record says', () => {
    const { readMembership, readCheckpoints, afterLostWrite, next } = Attempt.prototype;
    Attempt.prototype.readMembership = async function () { this.membership = await readMembership.call(this); return this.membership; };
    Attempt.prototype.readCheckpoints = async function (epoch) { this.checkpoints = await readCheckpoints.call(this, epoch); return this.checkpoints; };
    Attempt.prototype.afterLostWrite = async function (...args) {
      const after = await afterLostWrite.apply(this, args);
      this.held = { membership: this.membership, checkpoints: this.checkpoints };
      return after;
    };
    Attempt.prototype.next = async function (record) {
      const held = this.held;
      this.held = null;
      if (!held) return next.call(this, record);
      // The old membership, as if it were still the record's epoch: no fence.
      const m = this.A.merge(held.membership, held.checkpoints);
      if (m.withheld) return this.end('withheld', record.epoch, record.cut, m.withheld);
      const order = this.A.membershipOrder(held.membership);
      if (this.A.compare(order, m.frontier, record.cut) > 0) return { write: { epoch: held.membership.epoch, cut: m.frontier, order } };
      return this.end('unchanged', record.epoch, record.cut);
    };
  }],
  'cutover-regress': ['policy monotone is handled like reset: the cutover may lower the cut', () => {
    MONOTONE.monotone = false;
  }],
  'op-id-reuse': ['op_id derived from the worker alone, so every attempt of a worker reuses it', () => {
    Publisher.prototype.opId = (worker) => `${worker}-1`;
  }],
  // checkpointer
  'overwrite': ['after a checkpoint conflict, writes again with the stored generation without checking that its cut is still ahead', () => {
    const ahead = IngestPass.prototype.ahead;
    IngestPass.prototype.ahead = function (cut, c) {
      if (this.conflicts > 0 && !this.overwrote) { this.overwrote = true; return true; } // retry on its generation, ahead or not
      return ahead.call(this, cut, c);
    };
  }],
  'max-observed': ["certifies through the greatest event observed instead of the provider's final claim", () => {
    const certifiable = IngestPass.prototype.certifiable;
    IngestPass.prototype.certifiable = function (page) {
      for (const ev of page.events) {
        if (this.maxSeen == null || this.A.compareCoordinates(this.order, ev.at, this.maxSeen) > 0) this.maxSeen = ev.at;
      }
      return this.maxSeen == null ? certifiable.call(this, page) : { at: this.maxSeen, kind: 'through' };
    };
  }],
  'outcomes-after': ["writes the checkpoint before recording the page's outcomes", () => {
    IngestPass.prototype.take = async function (page, cut) {
      if (cut !== null) await this.certify(cut, page.next_token); // certified before the outcomes are durable
      for (const ev of page.events) await this.recordOutcome(ev.id);
    };
  }],
  'ingest-report-computed': ['ingest_ok reports the cut it tried to write, even when the write failed', () => {
    const { writeCheckpoint, report } = IngestPass.prototype;
    IngestPass.prototype.writeCheckpoint = function (ckpt, expected) {
      this.lastProposal = ckpt.cut;
      return writeCheckpoint.call(this, ckpt, expected);
    };
    IngestPass.prototype.report = function () {
      return this.lastProposal != null ? this.lastProposal : report.call(this);
    };
  }],
};

export const CATALOG = Object.fromEntries(Object.entries(BUGS).map(([name, [what]]) => [name, what]));

export function parseBugs(list) {
  const out = new Set();
  for (const raw of list) {
    for (const name of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
      if (!(name in BUGS)) throw new Error(`unknown bug ${JSON.stringify(name)}; --list-bugs lists them`);
      out.add(name);
    }
  }
  return out;
}

// Switch the named bugs on: each mutation replaces one part of the program.
export function applyBugs(names, parts) {
  for (const name of names) BUGS[name][1](parts);
}
