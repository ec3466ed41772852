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

import * as V from './values.js';

class Stop extends Error {}

export class Checkpointer {
  constructor({ algebra, options, io }) {
    this.algebra = algebra;
    this.options = options;
    this.io = io;
  }

  async ingest(req) {
    const partition = V.str(req.get('partition'), 'ingest.partition');
    const scope = V.str(req.get('scope'), 'ingest.scope');
    const epoch = V.int(req.get('epoch'), 'ingest.epoch');
    const order = V.order(req.get('order'), 'ingest.order');
    V.str(req.get('worker'), 'ingest.worker');
    return new IngestPass(this, { partition, scope, epoch, order }).run();
  }
}

// One ingest pass. Each step is a method, so that a deliberate bug (bugs.js)
// replaces exactly one of them; nothing here knows of bugs.
export class IngestPass {
  constructor(checkpointer, { partition, scope, epoch, order }) {
    this.A = checkpointer.algebra;
    this.options = checkpointer.options;
    this.io = checkpointer.io;
    Object.assign(this, { partition, scope, epoch, order });
    this.timeouts = 0;
    this.conflicts = 0;
    this.known = null; // the last stored checkpoint this pass was shown (read, ack or conflict)
    this.recorded = new Set(); // event ids given an outcome in this pass
  }

  // A stored checkpoint this pass may build on: a final one of this very key.
  valid(c) {
    return c !== null && c.partition === this.partition && c.scope === this.scope &&
      c.epoch === this.epoch && c.finality === 'final';
  }

  async retrying(op, fields, parse) {
    for (;;) {
      const r = await this.io.call(op, { partition: this.partition, ...fields });
      if (r.ok) return parse(r);
      if (r.error !== 'timeout') throw new V.InvalidValue(`reply(${op}).error`, `unexpected ${JSON.stringify(r.error)}`);
      if (++this.timeouts > this.options.maxTimeouts) throw new Stop();
    }
  }

  readCheckpoint() {
    return this.retrying('read_checkpoint', {}, (r) => V.checkpointOrNull(r.body.get('checkpoint'), 'reply.checkpoint'));
  }

  async recordOutcome(id) {
    if (this.recorded.has(id)) return;
    for (;;) {
      const r = await this.io.call('record_outcome', { event_id: id, outcome: 'processed' });
      if (r.ok) break;
      // A lost response: recording is idempotent per event id, so send it again.
      if (r.error !== 'timeout') throw new V.InvalidValue('reply(record_outcome).error', `unexpected ${JSON.stringify(r.error)}`);
      if (++this.timeouts > this.options.maxTimeouts) throw new Stop();
    }
    this.recorded.add(id);
  }

  // Should `cut` replace the stored checkpoint `c`? Only if strictly ahead;
  // a misconfigured checkpoint (provisional, other scope/epoch) at the same
  // cut is replaced too (the stored cut still never decreases).
  ahead(cut, c) {
    if (c === null) return cut !== null;
    const r = this.A.compare(this.order, cut, c.cut);
    return r > 0 || (r === 0 && !this.valid(c) && cut !== null);
  }

  // What a page lets us certify: the provider's final claim, exactly.
  certifiable(page) {
    return page.claim !== null && page.claim.final ? page.claim.cut : null;
  }

  // One page: outcomes first (every enumerated event gets a durable terminal
  // outcome before any cut covering it is certified), then the certificate.
  async take(page, cut) {
    for (const ev of page.events) await this.recordOutcome(ev.id);
    if (cut !== null) await this.certify(cut, page.next_token);
  }

  writeCheckpoint(ckpt, expected) {
    return this.io.call('write_checkpoint', {
      partition: this.partition, expected_generation: expected, checkpoint: V.wireCheckpoint(ckpt),
    });
  }

  // Certify `cut` with continuation `token`: conditional on the generation.
  async certify(cut, token) {
    for (;;) {
      if (!this.ahead(cut, this.known)) return;
      const expected = this.known === null ? null : this.known.generation;
      const ckpt = {
        partition: this.partition, cut, token,
        generation: expected === null ? 1n : expected + 1n, // the store sets it anyway
        scope: this.scope, epoch: this.epoch, finality: 'final',
      };
      const r = await this.writeCheckpoint(ckpt, expected);
      if (r.ok) { this.known = V.checkpoint(r.body.get('checkpoint'), 'reply.checkpoint'); return; }
      if (r.error === 'conflict') {
        // Another writer got there first; its checkpoint is the one stored.
        this.known = V.checkpointOrNull(r.body.get('checkpoint'), 'reply.checkpoint');
        if (++this.conflicts > this.options.maxTimeouts) throw new Stop();
        continue; // write again on its generation only if still ahead of it
      }
      if (r.error !== 'timeout') throw new V.InvalidValue('reply(write_checkpoint).error', `unexpected ${JSON.stringify(r.error)}`);
      // The response was lost: applied or not, only the store knows.
      if (++this.timeouts > this.options.maxTimeouts) throw new Stop();
      this.known = await this.readCheckpoint();
    }
  }

  // The cut certified now: the stored checkpoint as last shown (never a cut
  // whose write was not acknowledged or confirmed by a read).
  report() {
    return this.valid(this.known) ? this.known.cut : null;
  }

  async run() {
    try {
      this.known = await this.readCheckpoint();
      let token = this.valid(this.known) ? this.known.token : null;
      for (let pages = 0; pages < this.options.maxPages; pages++) {
        const page = await this.retrying('fetch_page', { token }, (r) => V.page(r.body.get('page'), 'reply.page'));
        for (const ev of page.events) this.A.coordinate(this.order, ev.at, 'reply.page.events.at');
        if (page.claim && page.claim.cut) this.A.coordinate(this.order, page.claim.cut.at, 'reply.page.claim.cut.at');
        await this.take(page, this.certifiable(page));
        if (page.next_token === null) break; // no further page for now
        token = page.next_token;
      }
    } catch (e) {
      if (!(e instanceof Stop)) throw e;
      // Out of patience with lost responses: stop the pass, report what is known.
    }
    return this.report();
  }
}
