// Reading the protocol's values off the wire, strictly.
//
// docs/semantics.md section 8: bad values (bools as integers, floats or NaN
// as coordinates, unknown kinds or fields) are refused, never withheld:
// withholding is for true statements about the data, not for malformed input.
// Every check here throws InvalidValue naming the field path; the wire loop
// (examples/wire/fencepost_wire.mjs) turns it into {"type": "error", "id": <request id>, "message": ...}.

import { JsonFloat, Refuse } from '../../wire/fencepost_wire.mjs';

// A bad value: the wire library answers it with an error carrying the request's id.
export class InvalidValue extends Refuse {}

function describe(v) {
  if (v === null) return 'null';
  if (v instanceof JsonFloat) return `the float ${v.text}`;
  if (v instanceof Map) return 'an object';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

function isObject(v) { return v instanceof Map; }

// An object with exactly these required fields and at most these optional ones.
function fields(obj, path, required, optional = []) {
  if (!isObject(obj)) throw new InvalidValue(path, `expected an object, got ${describe(obj)}`);
  for (const k of required) {
    if (!obj.has(k)) throw new InvalidValue(`${path}.${k}`, 'missing field');
  }
  for (const k of obj.keys()) {
    if (!required.includes(k) && !optional.includes(k)) {
      throw new InvalidValue(`${path}.${k}`, 'unknown field');
    }
  }
  return obj;
}

function int(v, path) {
  // A BigInt here is always an integer literal; a bool is never an integer.
  if (typeof v !== 'bigint') throw new InvalidValue(path, `expected an integer, got ${describe(v)}`);
  return v;
}
function str(v, path) {
  if (typeof v !== 'string') throw new InvalidValue(path, `expected a string, got ${describe(v)}`);
  return v;
}
function strOrNull(v, path) { return v === null ? null : str(v, path); }
function bool(v, path) {
  if (typeof v !== 'boolean') throw new InvalidValue(path, `expected a boolean, got ${describe(v)}`);
  return v;
}
function oneOf(v, path, choices) {
  if (typeof v !== 'string' || !choices.includes(v)) {
    throw new InvalidValue(path, `expected one of ${choices.join(', ')}, got ${typeof v === 'string' ? JSON.stringify(v) : describe(v)}`);
  }
  return v;
}

// ---- order: {"name", "kind": "integer", "successor": bool} | {"name", "kind": "string"}
function order(v, path) {
  fields(v, path, ['name', 'kind'], ['successor']);
  const name = str(v.get('name'), `${path}.name`);
  const kind = oneOf(v.get('kind'), `${path}.kind`, ['integer', 'string']);
  if (kind === 'integer') {
    if (!v.has('successor')) throw new InvalidValue(`${path}.successor`, 'missing field');
    return { name, kind, successor: bool(v.get('successor'), `${path}.successor`) };
  }
  // The string order has no successor (docs/semantics.md section 1, and
  // section 8: strings are treated as dense). Tolerate an explicit false.
  if (v.has('successor') && bool(v.get('successor'), `${path}.successor`)) {
    throw new InvalidValue(`${path}.successor`, 'a string order has no exact successor');
  }
  return { name, kind, successor: false };
}

// ---- cut: null (nothing) | {"at": coordinate, "kind": "before" | "through"}
// A coordinate is a BigInt or a string here; whether it fits the order it is
// compared under is checked by the algebra (coordinate()).
function cut(v, path) {
  if (v === null) return null;
  fields(v, path, ['at', 'kind']);
  const at = v.get('at');
  if (typeof at !== 'bigint' && typeof at !== 'string') {
    throw new InvalidValue(`${path}.at`, `expected an integer or a string coordinate, got ${describe(at)}`);
  }
  const kind = oneOf(v.get('kind'), `${path}.kind`, ['before', 'through']);
  return { at, kind };
}

// ---- checkpoint
function checkpoint(v, path) {
  fields(v, path, ['partition', 'cut', 'token', 'generation', 'scope', 'epoch', 'finality']);
  return {
    partition: str(v.get('partition'), `${path}.partition`),
    cut: cut(v.get('cut'), `${path}.cut`),
    token: strOrNull(v.get('token'), `${path}.token`),
    generation: int(v.get('generation'), `${path}.generation`),
    scope: str(v.get('scope'), `${path}.scope`),
    epoch: int(v.get('epoch'), `${path}.epoch`),
    finality: oneOf(v.get('finality'), `${path}.finality`, ['final', 'provisional']),
  };
}
function checkpointOrNull(v, path) { return v === null ? null : checkpoint(v, path); }

function list(v, path, item) {
  if (!Array.isArray(v)) throw new InvalidValue(path, `expected an array, got ${describe(v)}`);
  return v.map((x, k) => item(x, `${path}[${k}]`));
}

// ---- membership: {"epoch", "scope", "partitions": {name: order name}, "orders": {order name: order}}
function membership(v, path) {
  fields(v, path, ['epoch', 'scope', 'partitions', 'orders']);
  const epoch = int(v.get('epoch'), `${path}.epoch`);
  const scope = str(v.get('scope'), `${path}.scope`);
  const ordersIn = v.get('orders');
  if (!isObject(ordersIn)) throw new InvalidValue(`${path}.orders`, `expected an object, got ${describe(ordersIn)}`);
  const orders = new Map();
  for (const [name, o] of ordersIn) {
    const parsed = order(o, `${path}.orders.${name}`);
    if (parsed.name !== name) throw new InvalidValue(`${path}.orders.${name}.name`, `names another order (${JSON.stringify(parsed.name)})`);
    orders.set(name, parsed);
  }
  const partsIn = v.get('partitions');
  if (!isObject(partsIn)) throw new InvalidValue(`${path}.partitions`, `expected an object, got ${describe(partsIn)}`);
  const partitions = new Map(); // partition name -> order name
  for (const [p, oname] of partsIn) {
    str(oname, `${path}.partitions.${p}`);
    if (!orders.has(oname)) throw new InvalidValue(`${path}.partitions.${p}`, `names an undeclared order ${JSON.stringify(oname)}`);
    partitions.set(p, oname);
  }
  return { epoch, scope, partitions, orders };
}

// ---- record: {"epoch", "cut", "revision", "op_id"}
function record(v, path) {
  fields(v, path, ['epoch', 'cut', 'revision', 'op_id']);
  return {
    epoch: int(v.get('epoch'), `${path}.epoch`),
    cut: cut(v.get('cut'), `${path}.cut`),
    revision: int(v.get('revision'), `${path}.revision`),
    op_id: strOrNull(v.get('op_id'), `${path}.op_id`),
  };
}

// ---- a provider page: {"events": [{"id", "at"}...], "next_token", "claim": {"cut", "final"} | null}
function page(v, path) {
  fields(v, path, ['events', 'next_token', 'claim']);
  const events = list(v.get('events'), `${path}.events`, (e, p) => {
    fields(e, p, ['id', 'at']);
    const at = e.get('at');
    if (typeof at !== 'bigint' && typeof at !== 'string') {
      throw new InvalidValue(`${p}.at`, `expected an integer or a string coordinate, got ${describe(at)}`);
    }
    return { id: str(e.get('id'), `${p}.id`), at };
  });
  let claim = v.get('claim');
  if (claim !== null) {
    fields(claim, `${path}.claim`, ['cut', 'final']);
    claim = { cut: cut(claim.get('cut'), `${path}.claim.cut`), final: bool(claim.get('final'), `${path}.claim.final`) };
  }
  return { events, next_token: strOrNull(v.get('next_token'), `${path}.next_token`), claim };
}

// Wire form of a cut (the domain form is already the wire form; null is nothing).
function wireCut(c) { return c === null ? null : { at: c.at, kind: c.kind }; }
function wireCheckpoint(c) {
  return {
    partition: c.partition, cut: wireCut(c.cut), token: c.token, generation: c.generation,
    scope: c.scope, epoch: c.epoch, finality: c.finality,
  };
}

export {
  fields, int, str, strOrNull, bool, oneOf, list,
  order, cut, checkpoint, checkpointOrNull, membership, record, page, wireCut, wireCheckpoint,
};
