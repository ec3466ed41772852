'use strict';
// Exact JSON for the conformance wire.
//
// JSON.parse turns every number into a JavaScript double, so 10^40 + 1 and
// 10^40 read as the same value. The protocol sends coordinates of any size
// ("integers of any size, as JSON allows"), so this module parses JSON itself:
//
//   - an integer literal (no fraction, no exponent) becomes a BigInt, exactly;
//   - any other number becomes a JsonFloat (kept apart, so that a float is
//     never mistaken for a coordinate or a count: validation refuses it);
//   - objects become Maps (key order kept, no prototype surprises such as a
//     key named "__proto__"), and a duplicate key is a parse error;
//   - NaN, Infinity, comments, trailing commas and raw control characters in
//     strings are refused, as strict JSON requires.
//
// stringify() writes BigInts exactly, plain objects in insertion order, and
// refuses anything that is not JSON (undefined, non-finite numbers...).

class JsonFloat {
  constructor(text) {
    this.text = text;
    this.value = Number(text);
  }
}

class JsonSyntaxError extends Error {}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

function parse(text) {
  let i = 0;
  const n = text.length;

  function fail(what) {
    throw new JsonSyntaxError(`${what} at offset ${i}`);
  }
  function skipWs() {
    while (i < n && WS.has(text.charCodeAt(i))) i++;
  }
  function value(depth) {
    if (depth > 512) fail('nesting too deep');
    skipWs();
    if (i >= n) fail('unexpected end of input');
    const c = text[i];
    if (c === '{') return object(depth);
    if (c === '[') return array(depth);
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    fail(`unexpected character ${JSON.stringify(c)}`);
  }
  function object(depth) {
    i++; // {
    const out = new Map();
    skipWs();
    if (text[i] === '}') { i++; return out; }
    for (;;) {
      skipWs();
      if (text[i] !== '"') fail('expected a string key');
      const key = string();
      if (out.has(key)) fail(`duplicate key ${JSON.stringify(key)}`);
      skipWs();
      if (text[i] !== ':') fail('expected ":"');
      i++;
      out.set(key, value(depth + 1));
      skipWs();
      if (text[i] === ',') { i++; continue; }
      if (text[i] === '}') { i++; return out; }
      fail('expected "," or "}"');
    }
  }
  function array(depth) {
    i++; // [
    const out = [];
    skipWs();
    if (text[i] === ']') { i++; return out; }
    for (;;) {
      out.push(value(depth + 1));
      skipWs();
      if (text[i] === ',') { i++; continue; }
      if (text[i] === ']') { i++; return out; }
      fail('expected "," or "]"');
    }
  }
  function string() {
    i++; // opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const code = text.charCodeAt(i);
      if (code === 0x22) { // "
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (code < 0x20) fail('raw control character in string');
      if (code === 0x5c) { // backslash
        out += text.slice(start, i);
        i++;
        const e = text[i];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            const hex = text.slice(i + 1, i + 5);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
            // A surrogate pair written as two escapes becomes one code point
            // (JavaScript strings are UTF-16, so concatenating them does it);
            // a lone surrogate stays a lone surrogate, as in Python.
            out += String.fromCharCode(parseInt(hex, 16));
            i += 4;
            break;
          }
          default: fail('bad escape');
        }
        i++;
        start = i;
        continue;
      }
      i++;
    }
  }
  function number() {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('bad number');
    i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) return BigInt(m[0]);
    const f = new JsonFloat(m[0]);
    if (!Number.isFinite(f.value)) fail('number out of range');
    return f;
  }

  const v = value(0);
  skipWs();
  if (i !== n) fail('trailing characters');
  return v;
}

// Serialize a value built by this program: plain objects (insertion order),
// Maps, arrays, strings, BigInts, safe-integer numbers, booleans, null.
function stringify(v) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'bigint': return v.toString();
    case 'number':
      if (!Number.isSafeInteger(v)) throw new TypeError(`refusing to send the number ${v}`);
      return String(v);
    case 'string': return JSON.stringify(v); // escapes lone surrogates as \udXXX
    case 'boolean': return v ? 'true' : 'false';
    case 'object': {
      if (Array.isArray(v)) return '[' + v.map(stringify).join(',') + ']';
      const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
      return '{' + entries.map(([k, x]) => JSON.stringify(k) + ':' + stringify(x)).join(',') + '}';
    }
    default:
      throw new TypeError(`cannot send a ${typeof v}`);
  }
}

module.exports = { parse, stringify, JsonFloat, JsonSyntaxError };
