// Drawer: the debug drawers of connected apps (docs/drawer.md) as controls — a switch for a toggle, a menu for a
// choice, text and number fields, a button for an action (one declared destructive asks first, in the page's own
// dialog), read-only text for info — grouped by section. A change goes to parleyd, which checks it against the
// app's declaration and asks the app; the control then shows the value the app answered, or the problem beside it
// and the drawer's value again. `drawer` events of the live stream update the controls in place (values the app
// changes itself too), without taking a field being edited away from the person typing in it.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { shortID } from './format.js';
import { subscribe } from './live.js';
import { errorPanel, confirmAction } from './notify.js';

/** An item's declaration without its value: when it stays the same, its control stays and takes the new value. */
function shape(item) {
  const { value, ...rest } = item;
  return JSON.stringify(rest);
}

function sameValue(a, b) {
  return a === b || (typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b));
}

/** Moves `children` into `parent` in this order, touching only those out of place (a moved node loses focus). */
function place(parent, children) {
  children.forEach((child, index) => {
    const at = parent.children[index];
    if (at !== child) parent.insertBefore(child, at ?? null);
  });
  while (parent.children.length > children.length) parent.lastElementChild.remove();
}

let controlCounter = 0;

/** One item's row: its label, its control, and a line for the outcome of the last change (or the problem). */
class ItemControl {
  constructor(app, item) {
    this.app = app;
    this.item = item;
    this.shape = shape(item);
    this.value = item.value;
    this.pending = 0;
    this.controlID = `drawer-control-${++controlCounter}`;
    this.message = h('div', { class: 'drawer-message', 'aria-live': 'polite' });
    this.control = this.build();
    const label =
      item.kind === 'action' || item.kind === 'info'
        ? h('span', { class: 'drawer-label', text: item.label || item.id })
        : h('label', { class: 'drawer-label', for: this.controlID, text: item.label || item.id });
    this.element = h(
      'div',
      { class: `drawer-item kind-${item.kind}`, dataset: { item: item.id, kind: item.kind } },
      h('div', { class: 'drawer-name' }, label, h('span', { class: 'drawer-id mono dim', title: 'The item’s id (parleyctl set/invoke)', text: item.id })),
      h('div', { class: 'drawer-control' }, this.control, this.hint()),
      this.message,
    );
    this.show(this.value);
  }

  /** The range and step of a number, a text's limit: what parleyd accepts, so that people know before they try. */
  hint() {
    const item = this.item;
    if (item.kind === 'text' && Number.isInteger(item.maxLength)) return h('span', { class: 'drawer-hint dim', text: `≤ ${item.maxLength} characters` });
    if (item.kind !== 'number' || (item.min == null && item.max == null && item.step == null)) return null;
    const parts = [];
    if (item.min != null || item.max != null) parts.push(`${item.min ?? '…'}–${item.max ?? '…'}`);
    if (item.step != null) parts.push(`step ${item.step}`);
    return h('span', { class: 'drawer-hint dim', text: parts.join(', ') });
  }

  build() {
    const item = this.item;
    const id = this.controlID;
    switch (item.kind) {
      case 'toggle': {
        const box = h('input', { id, type: 'checkbox', role: 'switch', class: 'switch' });
        box.addEventListener('change', () => this.set(box.checked));
        return box;
      }
      case 'choice': {
        const select = h('select', { id }, (item.options || []).map((option) => h('option', { value: option.id, text: option.label || option.id })));
        select.addEventListener('change', () => this.set(select.value));
        return select;
      }
      case 'text': {
        // No maxlength: the browser counts UTF-16 units, parleyd characters; parleyd says when a text is too long.
        const input = h('input', { id, type: 'text', class: 'drawer-text', spellcheck: 'false', autocomplete: 'off' });
        this.editable(input, () => input.value);
        return input;
      }
      case 'number': {
        const input = h('input', { id, type: 'number', class: 'drawer-number' });
        if (item.min != null) input.min = String(item.min);
        if (item.max != null) input.max = String(item.max);
        input.step = item.step != null ? String(item.step) : 'any';
        this.editable(input, () => {
          const text = input.value.trim();
          // An empty field (or one the browser cannot read as a number) has no value to send.
          if (text === '' || !Number.isFinite(Number(text))) return undefined;
          return Number(text);
        });
        return input;
      }
      case 'action': {
        const destructive = item.destructive === true;
        const button = h('button', {
          id,
          type: 'button',
          class: destructive ? 'drawer-action danger' : 'drawer-action',
          title: destructive ? 'Cannot be undone: asks first' : null,
          text: destructive ? `${item.label || item.id}…` : item.label || item.id,
        });
        button.addEventListener('click', () => this.invoke());
        return button;
      }
      default: // info, and kinds this page does not know: shown, not editable
        return h('output', { id, class: 'drawer-info mono' });
    }
  }

  /** Text and number fields: applied on Enter or when the field is left, Escape puts the drawer's value back. */
  editable(input, read) {
    const apply = () => {
      if (!this.dirty()) return;
      const value = read();
      if (value === undefined) {
        this.problem({ title: 'Not a number', detail: `“${input.value}” is not a number` });
        this.show(this.value);
        return;
      }
      this.set(value);
    };
    input.addEventListener('change', apply);
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        apply();
      } else if (event.key === 'Escape') {
        this.show(this.value);
        input.select();
      }
    });
  }

  /** Whether the field holds something the person typed that is not the drawer's value. */
  dirty() {
    const input = this.control;
    if (this.item.kind === 'number') return input.value !== (this.value == null ? '' : String(this.value)) || input.validity.badInput;
    return input.value !== (this.value ?? '');
  }

  editing() {
    return (this.item.kind === 'text' || this.item.kind === 'number') && document.activeElement === this.control && this.dirty();
  }

  /** Shows `value` in the control (the drawer's value, or the app's answer). */
  show(value) {
    const control = this.control;
    switch (this.item.kind) {
      case 'toggle':
        control.checked = value === true;
        break;
      case 'choice': {
        const known = Array.from(control.options).some((option) => option.value === value && !option.dataset.unknown);
        for (const option of Array.from(control.options)) if (option.dataset.unknown) option.remove();
        if (!known && value != null) {
          // A value that is not among the options (the app's own business): shown as it is rather than hidden.
          control.appendChild(h('option', { value: String(value), disabled: true, dataset: { unknown: '1' }, text: `${value} (not an option)` }));
        }
        control.value = value == null ? '' : String(value);
        break;
      }
      case 'text':
      case 'number':
        control.value = value == null ? '' : String(value);
        break;
      case 'action':
        break;
      default:
        control.textContent = value == null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
    }
  }

  /** A new value from parleyd (a drawer event): shown unless the person is typing something else there. */
  update(value) {
    this.value = value;
    if (this.pending > 0 || this.editing()) return;
    this.show(value);
  }

  async set(value) {
    // What the field held when the value went out: if the person types on meanwhile, the answer leaves it be.
    const sent = this.item.kind === 'text' || this.item.kind === 'number' ? this.control.value : null;
    this.pending += 1;
    this.element.classList.add('busy');
    this.element.setAttribute('aria-busy', 'true');
    this.clearMessage();
    try {
      const answer = await api.setDrawerValue(this.app.id, this.item.id, value);
      if (answer && 'value' in answer) this.value = answer.value;
      this.done(answer && answer.message ? answer.message : '');
    } catch (error) {
      this.problem(error);
    } finally {
      this.pending -= 1;
      if (this.pending === 0) {
        this.element.classList.remove('busy');
        this.element.removeAttribute('aria-busy');
        // The app's value, or the drawer's when the change was refused.
        if (sent === null || this.control.value === sent) this.show(this.value);
      }
    }
  }

  async invoke() {
    const button = this.control;
    // An action its app declares destructive (it deletes, resets, sends) runs only once the person says so; a
    // misplaced click on a phone must not empty someone's list.
    if (this.item.destructive === true) {
      const label = this.item.label || this.item.id;
      const ok = await confirmAction({
        title: `${label}?`,
        message: `${this.app.name || 'The app'} declares “${label}” (${this.item.id}) as one that cannot be undone.`,
        ok: label,
        danger: true,
      });
      if (!ok) return;
    }
    button.disabled = true;
    this.element.classList.add('busy');
    this.element.setAttribute('aria-busy', 'true');
    this.clearMessage();
    try {
      const answer = await api.invokeDrawerAction(this.app.id, this.item.id);
      this.done(answer && typeof answer.message === 'string' && answer.message ? answer.message : 'Done', { result: true });
    } catch (error) {
      this.problem(error);
    } finally {
      button.disabled = false;
      this.element.classList.remove('busy');
      this.element.removeAttribute('aria-busy');
    }
  }

  clearMessage() {
    clear(this.message).className = 'drawer-message';
    this.message.removeAttribute('role');
    this.element.classList.remove('failed');
  }

  done(message, { result = false } = {}) {
    this.clearMessage();
    if (!message) return;
    this.message.classList.add(result ? 'result' : 'note');
    this.message.appendChild(h('span', { class: 'drawer-result', text: message }));
  }

  /** The problem (RFC 9457: title and detail, as api.js makes it) beside the control. */
  problem(error) {
    if (error && error.name === 'AbortError') return;
    this.clearMessage();
    this.element.classList.add('failed');
    this.message.classList.add('error');
    const title = error && error.title ? error.title : (error && error.message) || String(error);
    const detail = error && error.title ? error.detail : '';
    this.message.setAttribute('role', 'alert');
    this.message.appendChild(h('span', { class: 'drawer-error' }, h('strong', { text: title }), detail ? ` — ${detail}` : null));
  }
}

/** One app's drawer: a heading, then its items by section (in the order the app declared them). */
class AppDrawer {
  constructor(peer) {
    this.id = peer.id;
    this.name = peer.name;
    this.controls = new Map(); // item id -> ItemControl
    this.sections = new Map(); // section name ('' for none) -> {element, list}
    this.title = h('h2', { class: 'drawer-app-name', dir: 'auto' });
    this.element = h(
      'section',
      { class: 'drawer-app', dataset: { peer: peer.id } },
      h('div', { class: 'drawer-app-head' }, this.title, h('span', { class: 'mono dim', title: peer.id, text: shortID(peer.id) })),
      (this.body = h('div', { class: 'drawer-sections' })),
    );
  }

  /** Takes the drawer as declared now: controls whose declaration is unchanged stay and take the new values. */
  apply(peer, items) {
    this.name = peer.name;
    this.title.textContent = peer.name || '(no name)';
    const seen = new Set();
    const order = new Map(); // section -> [rows]
    for (const item of items) {
      if (!item || typeof item.id !== 'string' || seen.has(item.id)) continue;
      seen.add(item.id);
      let control = this.controls.get(item.id);
      if (control && control.shape === shape(item)) {
        if (!sameValue(control.value, item.value)) control.update(item.value);
      } else {
        control = new ItemControl(this, item);
        this.controls.set(item.id, control);
      }
      const section = typeof item.section === 'string' ? item.section : '';
      if (!order.has(section)) order.set(section, []);
      order.get(section).push(control.element);
    }
    for (const id of Array.from(this.controls.keys())) if (!seen.has(id)) this.controls.delete(id);
    const groups = [];
    for (const [section, rows] of order) {
      let group = this.sections.get(section);
      if (!group) {
        const list = h('div', { class: 'drawer-items' });
        const element = h('div', { class: section ? 'drawer-section' : 'drawer-section unnamed', dataset: { section } }, section ? h('h3', { text: section }) : null, list);
        group = { element, list };
        this.sections.set(section, group);
      }
      place(group.list, rows);
      groups.push(group.element);
    }
    for (const section of Array.from(this.sections.keys())) if (!order.has(section)) this.sections.delete(section);
    place(this.body, groups);
  }
}

export class DrawerView {
  constructor() {
    this.apps = new Map(); // peer id -> AppDrawer
    this.list = h('div', { class: 'drawer-apps' });
    this.empty = h('p', { class: 'placeholder drawer-empty', hidden: true },
      'No connected app offers a drawer. Apps declare one with ', h('code', { text: 'parley.drawer.Declare' }), ' (docs/drawer.md).');
    this.status = h('div', { class: 'view-status' });
    this.element = h(
      'div',
      { class: 'page drawer-view' },
      h('div', { class: 'page-head' }, h('h1', { text: 'Drawer' }), h('span', { class: 'dim', text: 'Settings and actions of connected apps' })),
      this.status,
      this.list,
      this.empty,
    );
    this.loading = null;
    this.again = false;
    this.buffered = null; // drawer events that arrive while the list is being fetched
    this.unsubscribe = [subscribe('drawer', (event) => this.event(event)), subscribe('resync', () => this.refresh())];
    document.title = 'Drawer · Parley';
    this.refresh();
  }

  matches(route) {
    return route.name === 'drawers';
  }

  update() {}

  destroy() {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  event(drawer) {
    if (!drawer || !drawer.peer || typeof drawer.peer.id !== 'string') return;
    if (this.buffered) this.buffered.push(drawer);
    this.applyDrawer(drawer);
    this.render();
  }

  async refresh() {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.buffered = [];
    this.loading = api.drawers().then(
      ({ drawers }) => {
        clear(this.status);
        const listed = new Set();
        for (const drawer of drawers || []) {
          listed.add(drawer.peer.id);
          this.applyDrawer(drawer);
        }
        for (const id of Array.from(this.apps.keys())) if (!listed.has(id)) this.apps.delete(id);
        // Events that came while the list was on its way are at least as new as it: they have the last word.
        for (const drawer of this.buffered) this.applyDrawer(drawer);
        this.render();
      },
      (error) => clear(this.status).appendChild(errorPanel(error, 'Could not list the drawers')),
    );
    await this.loading;
    this.loading = null;
    this.buffered = null;
    if (this.again) {
      this.again = false;
      this.refresh();
    }
  }

  applyDrawer({ peer, items }) {
    if (!Array.isArray(items) || items.length === 0) {
      this.apps.delete(peer.id);
      return;
    }
    let app = this.apps.get(peer.id);
    if (!app) {
      app = new AppDrawer(peer);
      this.apps.set(peer.id, app);
    }
    app.apply(peer, items);
  }

  render() {
    const apps = Array.from(this.apps.values()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    place(this.list, apps.map((app) => app.element));
    this.empty.hidden = apps.length > 0 || this.status.childElementCount > 0;
  }
}
