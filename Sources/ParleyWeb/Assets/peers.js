// Peers: connected ones first, then those discovered but not connected; addresses, accepted message types,
// whether they proved the shared secret. Refreshed on every `peers` event.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { dateTime, timeTitle, shortID } from './format.js';
import { subscribe, connected, staleMark } from './live.js';
import { errorPanel, showError, toast, confirmAction } from './notify.js';

export class PeersView {
  constructor() {
    this.unsubscribe = [];
    this.table = h('table', { class: 'grid peers' });
    this.status = h('div', { class: 'view-status' });
    this.devices = h('section', { class: 'devices' });
    this.element = h('div', { class: 'page peers-view' }, h('div', { class: 'page-head' }, h('h1', { text: 'Peers' })), this.devices, this.status, this.table);
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
    this.loading = Promise.all([
      api.peers().then(
        ({ peers }) => {
          clear(this.status);
          this.render(peers);
        },
        (error) => clear(this.status).appendChild(errorPanel(error, 'Could not list the peers')),
      ),
      api.devices().then(
        (devices) => this.renderDevices(devices),
        (error) => clear(this.devices).appendChild(errorPanel(error, 'Could not list the devices')),
      ),
    ]);
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

  /** Pairing requests first, each with the code the device shows and a choice; then the paired devices. */
  renderDevices({ fingerprint, paired, pending }) {
    clear(this.devices);
    this.devices.appendChild(
      h('p', { class: 'device-self' }, 'This debugger: ', h('span', { class: 'mono fingerprint', title: fingerprint, text: short(fingerprint) })),
    );
    for (const request of pending) {
      const decide = (decision) => async () => {
        try {
          const { done } = await api.decideDevice(request.fingerprint, decision);
          toast(done);
        } catch (error) {
          showError(error, decision === 'accept' ? 'Could not pair' : 'Could not refuse');
        }
        this.refresh();
      };
      this.devices.appendChild(
        h(
          'div',
          { class: 'pairing-request', role: 'alert', dataset: { fingerprint: request.fingerprint } },
          h('div', null, h('strong', { text: request.name }), ` asks to pair (${request.address}, ${dateTime(request.requestedAt)})`),
          h('div', { class: 'device-line' }, 'Device ', h('span', { class: 'mono', title: request.fingerprint, text: short(request.fingerprint) })),
          h('div', { class: 'pairing-code', 'aria-label': 'pairing code', text: request.code }),
          h('p', { class: 'dim', text: 'Accept only if the device shows the same code: a machine in the middle shows another.' }),
          h(
            'div',
            { class: 'actions changes' },
            h('button', { type: 'button', class: 'primary accept', onclick: decide('accept'), text: 'Accept' }),
            h('button', { type: 'button', class: 'refuse', onclick: decide('refuse'), text: 'Refuse' }),
          ),
        ),
      );
    }
    if (paired.length === 0) return;
    const table = h('table', { class: 'grid paired-devices' });
    table.appendChild(h('thead', null, h('tr', null, ['device', 'name', 'paired', 'last seen', ''].map((label) => h('th', { text: label })))));
    const body = h('tbody');
    for (const device of paired) {
      const unpair = async () => {
        const sure = await confirmAction({
          title: `Unpair ${device.name}?`,
          message: 'Its open connections close at once and it is refused until it pairs again.',
          ok: 'Unpair',
          danger: true,
        });
        if (!sure) return;
        try {
          toast((await api.decideDevice(device.fingerprint, 'unpair')).done);
        } catch (error) {
          showError(error, 'Could not unpair');
        }
        this.refresh();
      };
      body.appendChild(
        h(
          'tr',
          { class: 'paired-device', dataset: { fingerprint: device.fingerprint } },
          h('td', { class: 'mono', 'data-label': 'device', title: device.fingerprint, text: short(device.fingerprint) }),
          h('td', { 'data-label': 'name', text: device.name }),
          h('td', { class: 'mono', 'data-label': 'paired', title: timeTitle(device.pairedAt), text: dateTime(device.pairedAt) }),
          h('td', { class: 'mono', 'data-label': 'last seen', text: device.connected ? 'connected' : device.lastSeen ? dateTime(device.lastSeen) : 'never' }),
          h('td', { class: 'changes' }, h('button', { type: 'button', class: 'danger unpair', onclick: unpair, text: 'Unpair' })),
        ),
      );
    }
    table.appendChild(body);
    this.devices.appendChild(h('h2', { text: 'Paired devices' }));
    this.devices.appendChild(table);
  }
}

/** A fingerprint's short form: its first four groups. */
function short(fingerprint) {
  return fingerprint.split('-').slice(0, 4).join('-');
}
