// router.js: every view's URL parsed and built from routes.js, the list parleyd serves the page at.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, urls } from '../../Sources/ParleyWeb/Assets/router.js';
import routes from '../../Sources/ParleyWeb/Assets/routes.js';

const at = (pathname, search = '') => parse({ pathname, search });
const plain = ({ query, ...route }) => route;

test('each view by its path, trailing slashes ignored', () => {
  assert.deepEqual(plain(at('/')), { name: 'sessions' });
  assert.deepEqual(plain(at('/peers/')), { name: 'peers' });
  assert.deepEqual(plain(at('/drawers')), { name: 'drawers' });
  assert.deepEqual(plain(at('/sessions/12')), { name: 'session', id: 12 });
  assert.deepEqual(plain(at('/sessions/12/entries/340', '?diff=338')), { name: 'entry', id: 12, seq: 340, diff: 338 });
  assert.deepEqual(plain(at('/sessions/12/logs/7')), { name: 'log', id: 12, log: 7 });
  assert.deepEqual(plain(at('/sessions/12/spans/8')), { name: 'span', id: 12, span: 8 });
  assert.deepEqual(plain(at('/traces', '?session=12')), { name: 'traces', session: 12 });
  assert.deepEqual(plain(at('/traces/4BF92F3577B34DA6A3CE929D0E0E4736', '?span=3')), { name: 'trace', trace: '4bf92f3577b34da6a3ce929d0e0e4736', span: 3 });
  assert.equal(at('/sessions/12', '?x=1').query.get('x'), '1');
});

test('a diff that is not a number is none; a path that is no view is notFound', () => {
  assert.equal(at('/sessions/1/entries/2', '?diff=x').diff, null);
  assert.equal(at('/sessions/1/entries/2').diff, null);
  assert.deepEqual(plain(at('/sessions/abc')), { name: 'notFound', path: '/sessions/abc' });
  assert.deepEqual(plain(at('/assets/main.js')), { name: 'notFound', path: '/assets/main.js' });
  assert.deepEqual(plain(at('/traces/not-hex')), { name: 'notFound', path: '/traces/not-hex' });
  assert.deepEqual(plain(at('/sessions/1/logs/x')), { name: 'notFound', path: '/sessions/1/logs/x' });
});

test('URLs built for each view parse back to it', () => {
  assert.equal(urls.sessions(), '/');
  assert.equal(urls.peers(), '/peers');
  assert.equal(urls.drawers(), '/drawers');
  assert.equal(urls.session(7), '/sessions/7');
  assert.equal(urls.entry(7, 9), '/sessions/7/entries/9');
  assert.equal(urls.entry(7, 9, null), '/sessions/7/entries/9');
  assert.equal(urls.entry(7, 9, 8), '/sessions/7/entries/9?diff=8');
  assert.equal(urls.log(7, 3), '/sessions/7/logs/3');
  assert.equal(urls.span(7, 4), '/sessions/7/spans/4');
  assert.equal(urls.traces(), '/traces');
  assert.equal(urls.traces(7), '/traces?session=7');
  assert.equal(urls.trace('4bf92f3577b34da6a3ce929d0e0e4736', 5), '/traces/4bf92f3577b34da6a3ce929d0e0e4736?span=5');
  const [pathname, search] = urls.entry(7, 9, 8).split('?');
  assert.deepEqual(plain(at(pathname, `?${search}`)), { name: 'entry', id: 7, seq: 9, diff: 8 });
});

test('routes.js names a URL for every view and the live events the page listens for', () => {
  assert.deepEqual(Object.keys(urls), routes.views.map((view) => view.name));
  assert.deepEqual(routes.liveEvents, ['entry', 'telemetry', 'session', 'peers', 'drawer']);
});
