'use strict';
// Deliberate, switchable mistakes (`--bug NAME`, or FENCEPOST_EXAMPLE_BUG=NAME;
// several may be given, comma-separated). Each one is a realistic error an
// implementer makes; README.md lists the property each should break. The
// correct code paths are always the default: a bug is only ever an `if` on
// `bugs.has(NAME)` next to the line it breaks, so the fix is readable too.

const CATALOG = {
  // algebra
  'kind-blind': 'compare ignores the endpoint kind on dense orders (before x == through x)',
  'epsilon': 'through x is treated as before x+1 on every integer order, successor or not (compare, and the ingest pass certifies before x+1)',
  'utf16': 'strings compared by UTF-16 code unit (JavaScript <) instead of by code point',
  'number': 'integer coordinates converted to JavaScript numbers (precision lost above 2^53)',
  'reason-order': 'withheld reasons checked in the wrong order (scope before epoch)',
  'skip-missing': 'merge skips a member that has no checkpoint instead of withholding',
  'provisional-ok': 'merge trusts a provisional checkpoint; the ingest pass certifies a non-final claim',
  'scope-blind': "merge accepts another scope's checkpoints",
  'epoch-blind': "merge accepts another epoch's checkpoints",
  'relabel': 'merge takes the minimum by coordinate alone, keeping whichever kind it met first',
  // publisher
  'stale-cut-retry': 'after a conflict, retries the same cut against the new revision without recomputing',
  'conflict-unchanged': 'after a conflict, reports unchanged ("someone else published") without deciding from the new record',
  'blind-success': 'a lost write response is taken as success (published)',
  'confirm-revision': 'after a lost write, a moved revision alone is taken as confirmation',
  'fence-blind': 'after a lost write, keeps the membership it held and retries in that epoch whatever the record says',
  'cutover-regress': 'policy monotone is handled like reset: the cutover may lower the cut',
  'op-id-reuse': 'op_id derived from the worker alone, so every attempt of a worker reuses it',
  // checkpointer
  'overwrite': 'after a checkpoint conflict, writes again with the stored generation without checking that its cut is still ahead',
  'max-observed': 'certifies through the greatest event observed instead of the provider\'s final claim',
  'outcomes-after': 'writes the checkpoint before recording the page\'s outcomes',
  'ingest-report-computed': 'ingest_ok reports the cut it tried to write, even when the write failed',
};

function parseBugs(list) {
  const out = new Set();
  for (const raw of list) {
    for (const name of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
      if (!(name in CATALOG)) throw new Error(`unknown bug ${JSON.stringify(name)}; --list-bugs lists them`);
      out.add(name);
    }
  }
  return out;
}

module.exports = { CATALOG, parseBugs };
