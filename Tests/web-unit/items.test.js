// items.js: the timeline's rows and its filter, as the API and the URL write them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  itemKey, rowFromItem, rowFromEntry, emptyFilter, filterFromQuery, filterParameters, withFilter, sameFilter, isActionFiltered, isFiltered,
  timelineParameters,
} from '../../Sources/ParleyWeb/Assets/items.js';

test('rows from the timeline\'s items and from entries: one key per kind and id, the time in nanoseconds', () => {
  const log = rowFromItem({ kind: 'log', time: '1764000010500000123', item: { id: 7, session: 1, record: {} } });
  assert.deepEqual([log.kind, log.id, log.key, log.time], ['log', 7, 'log:7', 1764000010500000123n]);
  const state = rowFromItem({ kind: 'state', time: '1764000010000000000', item: { sequence: 7, session: 1 } });
  assert.equal(state.key, 'state:7');
  assert.notEqual(state.key, log.key);
  const entry = rowFromEntry({ sequence: 7, session: 1, time: '2025-11-24T16:00:10.000Z' });
  assert.deepEqual([entry.key, entry.time], ['state:7', 1764000010000000000n]);
  assert.equal(itemKey('span', 3), 'span:3');
});

test('a filter from the URL and back: only what narrows the list, in one order', () => {
  const query = new URLSearchParams('q=slow&kinds=span,log,bogus&level=warning&label=app.*&pattern=add*&mode=hide&diff=3');
  const filter = filterFromQuery(query);
  assert.deepEqual(filter, { filter: '', pattern: 'add*', mode: 'hide', kinds: ['log', 'span'], level: 'warning', label: 'app.*', text: 'slow' });
  assert.deepEqual(filterParameters(filter), [['kinds', 'log,span'], ['level', 'warning'], ['label', 'app.*'], ['q', 'slow'], ['pattern', 'add*'], ['mode', 'hide']]);
  assert.deepEqual(filterParameters(emptyFilter()), []);
  assert.deepEqual(filterFromQuery(new URLSearchParams('level=loud&kinds=nothing&mode=sideways')), emptyFilter());
  assert.deepEqual(filterParameters({ ...emptyFilter(), mode: 'hide' }), [], 'hide alone hides nothing');
});

test('URLs carry the filter; other parameters stay', () => {
  const filter = { ...emptyFilter(), kinds: ['log'], text: 'a b&c' };
  assert.equal(withFilter('/sessions/1/entries/5?diff=3', filter), '/sessions/1/entries/5?diff=3&kinds=log&q=a+b%26c');
  assert.equal(withFilter('/sessions/1/logs/9?kinds=span&level=error', emptyFilter()), '/sessions/1/logs/9');
  assert.deepEqual(filterFromQuery(new URLSearchParams(withFilter('/x', filter).split('?')[1])), filter);
});

test('which filter is which: action filters list states alone; the timeline API gets only its own parameters', () => {
  const filter = { ...emptyFilter(), kinds: ['state', 'log'], level: 'error', pattern: 'add*' };
  assert.ok(isActionFiltered(filter) && isFiltered(filter));
  assert.ok(!isActionFiltered({ ...emptyFilter(), level: 'error' }));
  assert.ok(!isFiltered(emptyFilter()));
  assert.deepEqual(timelineParameters(filter), { kinds: 'state,log', level: 'error' });
  assert.ok(sameFilter({ ...emptyFilter(), kinds: ['span', 'log'] }, { ...emptyFilter(), kinds: ['log', 'span'] }));
  assert.ok(!sameFilter(emptyFilter(), { ...emptyFilter(), label: 'x' }));
});
