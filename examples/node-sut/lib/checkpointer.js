'use strict';
// Level `checkpointer`: one ingest pass over one partition in one membership
// epoch (docs/semantics.md section 3; docs/procedure.md "Represent the
// boundary explicitly").
//
// The pass, in the domain's words:
//   1. Read the stored checkpoint of (partition, epoch of the request).
//   2. Fetch pages from its continuation token (from the start when there is
//      none, or when the stored checkpoint is not a valid final checkpoint of
//      this partition, scope and epoch: its token is then not trusted).
//   3. For every event of every page: record its terminal outcome (idempotent
//      per event id; repeated events are recorded once per pass).
//   4. Only then, if the page carries a FINAL claim whose cut is ahead of the
//      stored one, certify exactly that cut: a conditional write on the stored
//      generation. The largest event observed and the token are never coverage;
//      a non-final claim certifies nothing; `through x` is never rewritten as
//      `before x+1` (or the reverse).
//   5. A conflict means another writer moved the checkpoint: its reply carries
//      the stored checkpoint; write again only if this cut is still strictly
//      ahead of it (a late retry never overwrites a newer checkpoint). A lost
//      response: reread the stored checkpoint (authoritative) before deciding.
//   6. End when the provider says there is no further page (next_token null),
//      and report the cut the store is known to hold.

const V = require('./values');

class Stop extends Error {}

function makeCheckpointer({ algebra, bugs, options, io }) {
  const maxTimeouts = options.maxTimeouts;
  const maxPages = options.maxPages;

  async function ingest(req) {
    const partition = V.str(req.get('partition'), 'ingest.partition');
    const scope = V.str(req.get('scope'), 'ingest.scope');
    const epoch = V.int(req.get('epoch'), 'ingest.epoch');
    const order = V.order(req.get('order'), 'ingest.order');
    V.str(req.get('worker'), 'ingest.worker');

    let timeouts = 0;
    let known = null; // the last stored checkpoint this pass was shown (read, ack or conflict)

    // A stored checkpoint this pass may build on: a final one of this very key.
    const valid = (c) => c !== null && c.partition === partition && c.scope === scope &&
      c.epoch === epoch && c.finality === 'final';

    async function retrying(op, fields, parse) {
      for (;;) {
        const r = await io.call(op, { partition, ...fields });
        if (r.ok) return parse(r);
        if (r.error !== 'timeout') throw new V.InvalidValue(`reply(${op}).error`, `unexpected ${JSON.stringify(r.error)}`);
        if (++timeouts > maxTimeouts) throw new Stop();
      }
    }
    const readCheckpoint = () => retrying('read_checkpoint', {},
      (r) => V.checkpointOrNull(r.body.get('checkpoint'), 'reply.checkpoint'));
    const recorded = new Set(); // event ids given an outcome in this pass
    async function recordOutcome(id) {
      if (recorded.has(id)) return;
      for (;;) {
        const r = await io.call('record_outcome', { event_id: id, outcome: 'processed' });
        if (r.ok) break;
        // A lost response: recording is idempotent per event id, so send it again.
        if (r.error !== 'timeout') throw new V.InvalidValue('reply(record_outcome).error', `unexpected ${JSON.stringify(r.error)}`);
        if (++timeouts > maxTimeouts) throw new Stop();
      }
      recorded.add(id);
    }

    // Should `cut` replace the stored checkpoint `c`? Only if strictly ahead;
    // a misconfigured checkpoint (provisional, other scope/epoch) at the same
    // cut is replaced too (the stored cut still never decreases).
    const ahead = (cut, c) => {
      if (c === null) return cut !== null;
      const r = algebra.compare(order, cut, c.cut);
      return r > 0 || (r === 0 && !valid(c) && cut !== null);
    };

    let lastProposal = null; // for the ingest-report-computed bug only
    let overwrote = false;   // for the overwrite bug only
    let conflicts = 0;

    // Certify `cut` with continuation `token`: conditional on the generation.
    async function certify(cut, token) {
      let blind = false; // overwrite bug only: skip the "still ahead?" check once
      for (;;) {
        if (!blind && !ahead(cut, known)) return;
        blind = false;
        const expected = known === null ? null : known.generation;
        const ckpt = {
          partition, cut, token,
          generation: expected === null ? 1n : expected + 1n, // the store sets it anyway
          scope, epoch, finality: 'final',
        };
        lastProposal = cut;
        const r = await io.call('write_checkpoint', {
          partition, expected_generation: expected, checkpoint: V.wireCheckpoint(ckpt),
        });
        if (r.ok) { known = V.checkpoint(r.body.get('checkpoint'), 'reply.checkpoint'); return; }
        if (r.error === 'conflict') {
          // Another writer got there first; its checkpoint is the one stored.
          known = V.checkpointOrNull(r.body.get('checkpoint'), 'reply.checkpoint');
          if (bugs.has('overwrite') && !overwrote) { overwrote = true; blind = true; } // BUG: retry on its generation, ahead or not
          if (++conflicts > maxTimeouts) throw new Stop();
          continue; // write again on its generation only if still ahead of it
        }
        if (r.error !== 'timeout') throw new V.InvalidValue('reply(write_checkpoint).error', `unexpected ${JSON.stringify(r.error)}`);
        // The response was lost: applied or not, only the store knows.
        if (++timeouts > maxTimeouts) throw new Stop();
        known = await readCheckpoint();
      }
    }

    try {
      known = await readCheckpoint();
      let token = valid(known) ? known.token : null;
      let maxSeen = null; // for the max-observed bug only
      for (let pages = 0; pages < maxPages; pages++) {
        const page = await retrying('fetch_page', { token }, (r) => V.page(r.body.get('page'), 'reply.page'));
        for (const ev of page.events) algebra.coordinate(order, ev.at, 'reply.page.events.at');
        if (page.claim && page.claim.cut) algebra.coordinate(order, page.claim.cut.at, 'reply.page.claim.cut.at');

        // What this page lets us certify: the provider's final claim, exactly.
        let cut = null;
        if (page.claim !== null && (page.claim.final || bugs.has('provisional-ok'))) cut = page.claim.cut;
        if (bugs.has('max-observed')) {
          for (const ev of page.events) {
            if (maxSeen === null || algebra.compareCoordinates(order, ev.at, maxSeen) > 0) maxSeen = ev.at;
          }
          cut = maxSeen === null ? cut : { at: maxSeen, kind: 'through' }; // BUG: observed is not certified
        }
        if (bugs.has('epsilon') && cut !== null && cut.kind === 'through' && order.kind === 'integer') {
          cut = { at: cut.at + 1n, kind: 'before' }; // BUG: a manufactured exclusive boundary
        }

        if (bugs.has('outcomes-after')) {
          if (cut !== null) await certify(cut, page.next_token); // BUG: certified before the outcomes are durable
          for (const ev of page.events) await recordOutcome(ev.id);
        } else {
          // Outcomes first: every enumerated event gets a durable terminal
          // outcome before any cut covering it is certified.
          for (const ev of page.events) await recordOutcome(ev.id);
          if (cut !== null) await certify(cut, page.next_token);
        }
        if (page.next_token === null) break; // no further page for now
        token = page.next_token;
      }
    } catch (e) {
      if (!(e instanceof Stop)) throw e;
      // Out of patience with lost responses: stop the pass, report what is known.
    }
    // The cut certified now: the stored checkpoint as last shown (never a cut
    // whose write was not acknowledged or confirmed by a read).
    if (bugs.has('ingest-report-computed') && lastProposal !== null) return lastProposal;
    return valid(known) ? known.cut : null;
  }

  return { ingest };
}

module.exports = { makeCheckpointer };
