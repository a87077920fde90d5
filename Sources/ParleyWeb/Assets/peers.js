// Peers: connected ones first, then those discovered but not connected; addresses, accepted message types,
// whether they proved the shared secret. Refreshed on every `peers` event.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { dateTime, timeTitle, shortID } from './format.js';
import { subscribe, connected, staleMark } from './live.js';
import { errorPanel } from './notify.js';

export class PeersView {
  constructor() {
    this.unsubscribe = [];
    this.table = h('table', { class: 'grid peers' });
    this.status = h('div', { class: 'view-status' });
    this.element = h('div', { class: 'page peers-view' }, h('div', { class: 'page-head' }, h('h1', { text: 'Peers' })), this.status, this.table);
    this.loading = null;
    this.again = false;
    this.peers = null;
    this.unsubscribe.push(
      subscribe('peers', () => this.refresh()),
      subscribe('resync', () => this.refresh()),
      subscribe('connection', () => this.peers && this.render(this.peers)),
    );
    document.title = 'Peers · Parley';
    this.refresh();
  }

  matches(route) {
    return route.name === 'peers';
  }

  update() {}

  destroy() {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  async refresh() {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = api.peers().then(
      ({ peers }) => {
        clear(this.status);
        this.render(peers);
      },
      (error) => clear(this.status).appendChild(errorPanel(error, 'Could not list the peers')),
    );
    await this.loading;
    this.loading = null;
    if (this.again) {
      this.again = false;
      this.refresh();
    }
  }

  render(peers) {
    this.peers = peers;
    // Without the stream, "connected" is what parleyd said before it went: a stale mark, not a claim.
    const known = connected();
    clear(this.table);
    this.table.appendChild(
      h('thead', null, h('tr', null, ['', 'name', 'id', 'kind', 'addresses', 'connected since', 'accepts', 'authenticated', 'in', 'out'].map((label) => h('th', { text: label })))),
    );
    const body = h('tbody');
    for (const peer of peers) {
      const addresses = peer.addresses && peer.addresses.length ? peer.addresses : peer.address ? [peer.address] : [];
      body.appendChild(
        h(
          'tr',
          { class: peer.connected ? 'peer-row connected' : 'peer-row discovered', dataset: { id: peer.id } },
          h('td', { class: 'c-live' }, peer.connected ? (known ? h('span', { class: 'live-dot', title: 'Connected', text: '●' }) : staleMark('Connected')) : h('span', { class: 'dim', title: 'Discovered, not connected', text: '○' })),
          h('td', { class: 'c-app', 'data-label': 'name', text: peer.name || '(no name)' }),
          h('td', { class: 'mono', 'data-label': 'id', title: peer.id, text: shortID(peer.id) }),
          h('td', { 'data-label': 'kind' }, h('span', { class: 'badge', text: peer.kind })),
          h('td', { class: 'mono', 'data-label': 'addresses' }, h('div', null, addresses.map((address) => h('div', { text: address })))),
          h('td', { class: 'mono', 'data-label': 'connected since', title: timeTitle(peer.connectedAt), text: peer.connected ? dateTime(peer.connectedAt) : 'not connected' }),
          h('td', { class: 'mono accepts', 'data-label': 'accepts' }, (peer.accepts || []).length ? h('div', null, peer.accepts.map((type) => h('div', { text: type }))) : h('span', { class: 'dim', text: '—' })),
          h('td', { 'data-label': 'authenticated' }, peer.authenticated ? h('span', { class: 'badge ok', text: 'yes' }) : h('span', { class: 'badge warn', title: 'This peer has not proved the shared secret', text: 'no' })),
          h('td', { class: 'num', 'data-label': 'in', text: (peer.messagesIn ?? 0).toLocaleString() }),
          h('td', { class: 'num', 'data-label': 'out', text: (peer.messagesOut ?? 0).toLocaleString() }),
        ),
      );
    }
    if (peers.length === 0) body.appendChild(h('tr', null, h('td', { colspan: '10', class: 'empty dim', text: 'No peers: nothing connected or discovered.' })));
    this.table.appendChild(body);
  }
}
