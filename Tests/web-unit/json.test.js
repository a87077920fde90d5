// json.js: states parsed and printed with the exact text of their numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExactNumber, kindOf, parseState, stringify, valueAt } from '../../Sources/ParleyWeb/Assets/json.js';

test('stringify writes an exact number with its own text, in compact and indented output', () => {
  const value = { price: new ExactNumber(1.1, '1.10'), big: new ExactNumber(12345678901234567000, '12345678901234567890'), n: 2 };
  assert.equal(stringify(value), '{"price":1.10,"big":12345678901234567890,"n":2}');
  assert.equal(stringify([new ExactNumber(1, '1.0')], 2), '[\n  1.0\n]');
  assert.equal(stringify(undefined), 'undefined');
});

test('kinds: an exact number is a number, an array is not an object', () => {
  assert.equal(kindOf(null), 'null');
  assert.equal(kindOf(new ExactNumber(1, '1.0')), 'number');
  assert.equal(kindOf([]), 'array');
  assert.equal(kindOf({}), 'object');
  assert.equal(kindOf('x'), 'string');
});

test('valueAt follows keys and indexes, and answers undefined past the end or through a leaf', () => {
  const root = { items: [{ title: 'a' }], n: new ExactNumber(1, '1.0') };
  assert.equal(valueAt(root, ['items', 0, 'title']), 'a');
  assert.equal(valueAt(root, ['items', 1]), undefined);
  assert.equal(valueAt(root, ['items', 'x']), undefined);
  assert.equal(valueAt(root, ['n', 'x']), undefined);
  assert.equal(valueAt(root, ['toString']), undefined);
});

test('parseState keeps the text of a number the double would change, where the runtime hands it over', () => {
  const state = parseState('{"price": 1.10, "n": 2}');
  assert.equal(state.n, 2);
  // Chromium 114+ gives the reviver the source text; a node without it parses plain doubles.
  let sourceText = false;
  JSON.parse('1', (key, value, context) => ((sourceText = Boolean(context && context.source === '1')), value));
  if (sourceText) {
    assert.ok(state.price instanceof ExactNumber);
    assert.equal(stringify(state), '{"price":1.10,"n":2}');
  } else {
    assert.equal(state.price, 1.1);
  }
});
