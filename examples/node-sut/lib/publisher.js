'use strict';
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

const V = require('./values');

class GaveUp extends Error {}

function makePublisher({ algebra, bugs, options, io }) {
  const maxWrites = options.maxWrites;     // conditional writes per attempt
  const maxTimeouts = options.maxTimeouts; // lost responses tolerated per attempt
  let attempts = 0; // per process (reset by `reset`); with the worker name it makes op_ids unique

  function reset() { attempts = 0; }

  async function publish(req) {
    const worker = V.str(req.get('worker'), 'publish.worker');
    const stream = V.str(req.get('stream'), 'publish.stream');
    const policy = V.oneOf(req.get('policy'), 'publish.policy', ['monotone', 'reset']);
    attempts += 1;
    // op_id: "<worker>-<n>", n counting this process's attempts. A restarted
    // worker is told a new name (<worker>.<n>), so ids never repeat across
    // incarnations. CHOICE: one op_id per attempt, reused by its retries
    // (allowed: only another attempt's op_id is a reuse).
    const opId = bugs.has('op-id-reuse') ? `${worker}-1` : `${worker}-${attempts}`;

    let shown = null;   // the last record this attempt was shown (any reply)
    let timeouts = 0;
    let writes = 0;

    const end = (outcome, epoch, cut, reason = null) => ({ outcome, epoch, cut, reason });

    // One call, retried while its response is lost (reads are idempotent).
    async function read(op, fields, parse) {
      for (;;) {
        const r = await io.call(op, { stream, ...fields });
        if (r.ok) return parse(r);
        if (r.error !== 'timeout') throw new V.InvalidValue(`reply(${op}).error`, `unexpected ${JSON.stringify(r.error)}`);
        timeouts += 1;
        if (timeouts > maxTimeouts) throw new GaveUp();
      }
    }
    const readRecord = async () => {
      shown = await read('read_publication', {}, (r) => V.record(r.body.get('record'), 'reply.record'));
      return shown;
    };
    const readMembership = () => read('read_membership', {}, (r) => V.membership(r.body.get('membership'), 'reply.membership'));
    const readCheckpoints = (epoch) => read('read_checkpoints', { epoch },
      (r) => V.list(r.body.get('checkpoints'), 'reply.checkpoints', V.checkpoint));

    // Sections 5 and 6 decide from the last reads: a final outcome, or a write.
    function decide(record, membership, checkpoints, { fenceBlind = false } = {}) {
      if (membership.epoch < record.epoch && !fenceBlind) {
        return end('withheld', record.epoch, record.cut, 'epoch_mismatch');
      }
      const m = algebra.merge(membership, checkpoints);
      if (m.withheld) return end('withheld', record.epoch, record.cut, m.withheld);
      const order = algebra.membershipOrder(membership);
      const ahead = algebra.compare(order, m.frontier, record.cut);
      if (membership.epoch === record.epoch || fenceBlind) {
        if (ahead > 0) return { write: { epoch: membership.epoch, cut: m.frontier, order } };
        return end('unchanged', record.epoch, record.cut);
      }
      // A newer epoch: the first claim in it comes from its own checkpoints of
      // every member (the merge above), and the policy decides a lower cut.
      if (policy === 'monotone' && ahead < 0 && !bugs.has('cutover-regress')) {
        return end('withheld', record.epoch, record.cut, 'cutover_pending');
      }
      return { write: { epoch: membership.epoch, cut: m.frontier, order } };
    }

    try {
      let record = await readRecord();
      let held = null;     // {membership, checkpoints} behind the last proposal (fence-blind bug only)
      let staleRetry = null;
      for (;;) {
        let d;
        if (staleRetry) {
          d = { write: staleRetry }; // BUG stale-cut-retry: the old cut, not recomputed
          staleRetry = null;
        } else if (held) {
          d = decide(record, held.membership, held.checkpoints, { fenceBlind: true }); // BUG fence-blind
          held = null;
        } else {
          const membership = await readMembership();
          const checkpoints = await readCheckpoints(membership.epoch);
          d = decide(record, membership, checkpoints);
          d.inputs = { membership, checkpoints };
        }
        if (!d.write) return d;

        if (writes >= maxWrites) throw new GaveUp();
        writes += 1;
        const proposal = d.write;
        const r = await io.call('write_publication', {
          stream, expected_revision: record.revision, epoch: proposal.epoch, cut: V.wireCut(proposal.cut), op_id: opId,
        });
        if (r.ok) {
          shown = V.record(r.body.get('record'), 'reply.record');
          // published: an acknowledged write; report that write's epoch and cut.
          return end('published', proposal.epoch, proposal.cut);
        }
        if (r.error === 'conflict') {
          // The revision moved. The reply carries the current record: a read.
          shown = V.record(r.body.get('record'), 'reply.record');
          if (bugs.has('conflict-unchanged')) return end('unchanged', shown.epoch, shown.cut); // BUG
          record = options.conflictReread ? await readRecord() : shown;
          if (bugs.has('stale-cut-retry')) staleRetry = proposal; // BUG
          continue; // back to step 2: reread membership and checkpoints, recompute
        }
        if (r.error !== 'timeout') throw new V.InvalidValue('reply(write_publication).error', `unexpected ${JSON.stringify(r.error)}`);

        // The response was lost: the write may or may not have been applied.
        timeouts += 1;
        if (bugs.has('blind-success')) return end('published', proposal.epoch, proposal.cut); // BUG
        if (timeouts > maxTimeouts) throw new GaveUp();
        const expected = record.revision;
        record = await readRecord(); // the authoritative record
        if (bugs.has('confirm-revision') && record.revision > expected) {
          return end('confirmed', proposal.epoch, proposal.cut); // BUG: a moved revision proves nothing
        }
        if (record.epoch === proposal.epoch &&
            algebra.compare(proposal.order, record.cut, proposal.cut) >= 0) {
          // Confirmed: the claim is present (only op_id === opId would prove
          // this attempt wrote it). CHOICE: report the proposal's cut, the
          // claim this attempt set out to make and now knows is public
          // (`--confirm-report record` reports the record's cut instead; the
          // harness accepts any cut between the two).
          const cut = options.confirmReport === 'record' ? record.cut : proposal.cut;
          return end('confirmed', proposal.epoch, cut);
        }
        if (bugs.has('fence-blind')) held = d.inputs; // BUG: keeps the old membership
        // Behind in the same epoch, or another epoch: decide again from this record.
      }
    } catch (e) {
      if (!(e instanceof GaveUp)) throw e;
      // gave_up: honest about what it knows, the last record it was shown (if any).
      return shown === null ? end('gave_up', null, null) : end('gave_up', shown.epoch, shown.cut);
    }
  }

  return { publish, reset };
}

module.exports = { makePublisher };
