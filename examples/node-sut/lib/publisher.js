// Level `publisher`: one publication attempt (docs/semantics.md sections 5, 6;
// docs/procedure.md "Publish and reconcile").
//
// The attempt, in the domain's words:
//   1. Read the publication record (epoch, cut, revision, op_id).
//   2. Read the CURRENT membership, then the checkpoints of ITS epoch.
//   3. Merge. Withheld: stop with the reason. Then the cutover rule:
//      - membership older than the record: withheld epoch_mismatch (the fence:
//        once the record carries epoch e2, no older epoch's claim is written);
//      - same epoch: write only if the merged cut is strictly ahead of the
//        record's, else unchanged;
//      - newer epoch: write, unless the policy is monotone and the new epoch's
//        cut is below the record's (withheld cutover_pending: the record keeps
//        the old epoch's claim, still true about the old membership).
//   4. Write conditionally on the revision read:
//      - acknowledged: published;
//      - conflict (the revision moved): the conflict reply carries the current
//        record, and a record shown in any reply counts as a read
//        (docs/conformance-protocol.md). CHOICE: decide from that record, no
//        separate read_publication (`--conflict-reread` issues one instead),
//        but always reread the membership and the checkpoints and recompute
//        before proposing another cut (procedure step 3): the old cut is never
//        reused;
//      - timeout (response lost, the write may or may not be applied): read
//        the authoritative record. Same epoch and at or past the proposal:
//        confirmed (the claim is present, whoever wrote it). Otherwise go back
//        to step 2 from that record: behind in the same epoch means recompute
//        and retry; another epoch means the cutover rule decides again.
//        Success or failure is never concluded from the missing response.
//   Conflicts and lost responses are retried within a budget; once it is spent
//   the attempt answers gave_up with the last record it was shown.

import * as V from './values.js';

class GaveUp extends Error {}

// Section 6: does the cutover policy keep the record monotone across epochs?
export const MONOTONE = { monotone: true, reset: false };

// The per-process part: counts attempts for op_ids (reset by `reset`).
export class Publisher {
  constructor({ algebra, options, io }) {
    this.algebra = algebra;
    this.options = options;
    this.io = io;
    this.attempts = 0;
  }

  reset() { this.attempts = 0; }

  // op_id: "<worker>-<n>", n counting this process's attempts. A restarted
  // worker is told a new name (<worker>.<n>), so ids never repeat across
  // incarnations. CHOICE: one op_id per attempt, reused by its retries
  // (allowed: only another attempt's op_id is a reuse).
  opId(worker) { return `${worker}-${this.attempts}`; }

  async publish(req) {
    const worker = V.str(req.get('worker'), 'publish.worker');
    const stream = V.str(req.get('stream'), 'publish.stream');
    const policy = V.oneOf(req.get('policy'), 'publish.policy', Object.keys(MONOTONE));
    this.attempts += 1;
    return new Attempt(this, { stream, policy, opId: this.opId(worker) }).run();
  }
}

// One publication attempt. Each step is a method, so that a deliberate bug
// (bugs.js) replaces exactly one of them; nothing here knows of bugs.
export class Attempt {
  constructor(publisher, { stream, policy, opId }) {
    this.A = publisher.algebra;
    this.options = publisher.options;
    this.io = publisher.io;
    this.stream = stream;
    this.policy = policy;
    this.opId = opId;
    this.shown = null; // the last record this attempt was shown (any reply)
    this.timeouts = 0;
    this.writes = 0;
  }

  end(outcome, epoch, cut, reason = null) { return { outcome, epoch, cut, reason }; }

  // One call, retried while its response is lost (reads are idempotent).
  async read(op, fields, parse) {
    for (;;) {
      const r = await this.io.call(op, { stream: this.stream, ...fields });
      if (r.ok) return parse(r);
      if (r.error !== 'timeout') throw new V.InvalidValue(`reply(${op}).error`, `unexpected ${JSON.stringify(r.error)}`);
      this.timeouts += 1;
      if (this.timeouts > this.options.maxTimeouts) throw new GaveUp();
    }
  }

  async readRecord() {
    this.shown = await this.read('read_publication', {}, (r) => V.record(r.body.get('record'), 'reply.record'));
    return this.shown;
  }

  readMembership() {
    return this.read('read_membership', {}, (r) => V.membership(r.body.get('membership'), 'reply.membership'));
  }

  readCheckpoints(epoch) {
    return this.read('read_checkpoints', { epoch }, (r) => V.list(r.body.get('checkpoints'), 'reply.checkpoints', V.checkpoint));
  }

  // Sections 5 and 6 decide from the last reads: a final outcome, or a write.
  decide(record, membership, checkpoints) {
    if (membership.epoch < record.epoch) { // the fence: never back to an older epoch
      return this.end('withheld', record.epoch, record.cut, 'epoch_mismatch');
    }
    const m = this.A.merge(membership, checkpoints);
    if (m.withheld) return this.end('withheld', record.epoch, record.cut, m.withheld);
    const order = this.A.membershipOrder(membership);
    const ahead = this.A.compare(order, m.frontier, record.cut);
    const write = { write: { epoch: membership.epoch, cut: m.frontier, order } };
    if (membership.epoch === record.epoch) {
      return ahead > 0 ? write : this.end('unchanged', record.epoch, record.cut);
    }
    // A newer epoch: the first claim in it comes from its own checkpoints of
    // every member (the merge above), and the policy decides a lower cut.
    if (MONOTONE[this.policy] && ahead < 0) {
      return this.end('withheld', record.epoch, record.cut, 'cutover_pending');
    }
    return write;
  }

  // Step 2 and 3: the current membership, its epoch's checkpoints, the decision.
  async next(record) {
    const membership = await this.readMembership();
    const checkpoints = await this.readCheckpoints(membership.epoch);
    return this.decide(record, membership, checkpoints);
  }

  async run() {
    try {
      let record = await this.readRecord();
      for (;;) {
        const d = await this.next(record);
        if (!d.write) return d;
        if (this.writes >= this.options.maxWrites) throw new GaveUp();
        this.writes += 1;
        const proposal = d.write;
        const r = await this.io.call('write_publication', {
          stream: this.stream, expected_revision: record.revision, epoch: proposal.epoch,
          cut: V.wireCut(proposal.cut), op_id: this.opId,
        });
        if (r.ok) {
          this.shown = V.record(r.body.get('record'), 'reply.record');
          // published: an acknowledged write; report that write's epoch and cut.
          return this.end('published', proposal.epoch, proposal.cut);
        }
        const after = r.error === 'conflict'
          ? await this.afterConflict(proposal, V.record(r.body.get('record'), 'reply.record'))
          : await this.afterLostWrite(proposal, record, r);
        if (after.outcome) return after; // a final answer
        record = after.record; // back to step 2: reread membership and checkpoints, recompute
      }
    } catch (e) {
      if (!(e instanceof GaveUp)) throw e;
      // gave_up: honest about what it knows, the last record it was shown (if any).
      const s = this.shown;
      return s === null ? this.end('gave_up', null, null) : this.end('gave_up', s.epoch, s.cut);
    }
  }

  // The revision moved. The reply carries the current record: a read. CHOICE:
  // decide from it (`--conflict-reread` reads it again); the old cut is never reused.
  async afterConflict(proposal, carried) {
    this.shown = carried;
    return { record: this.options.conflictReread ? await this.readRecord() : carried };
  }

  // The response was lost: the write may or may not have been applied. Read the
  // authoritative record; never conclude anything from the missing response.
  async afterLostWrite(proposal, before, r) {
    if (r.error !== 'timeout') throw new V.InvalidValue('reply(write_publication).error', `unexpected ${JSON.stringify(r.error)}`);
    this.timeouts += 1;
    if (this.timeouts > this.options.maxTimeouts) throw new GaveUp();
    const record = await this.readRecord();
    if (this.confirms(proposal, before, record)) {
      // Confirmed: the claim is present (only op_id === opId would prove this
      // attempt wrote it). CHOICE: report the proposal's cut, the claim this
      // attempt set out to make and now knows is public (`--confirm-report
      // record` reports the record's cut instead; the harness accepts either).
      const cut = this.options.confirmReport === 'record' ? record.cut : proposal.cut;
      return this.end('confirmed', proposal.epoch, cut);
    }
    // Behind in the same epoch, or another epoch: decide again from this record.
    return { record };
  }

  // Same epoch and at or past the proposal: the claim is present.
  confirms(proposal, before, record) {
    return record.epoch === proposal.epoch && this.A.compare(proposal.order, record.cut, proposal.cut) >= 0;
  }
}
