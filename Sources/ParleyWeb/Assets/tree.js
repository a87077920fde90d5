// A collapsible JSON tree, lazy: a node's children are built only when it is expanded, and long arrays and
// objects show their members in chunks ("show more"). Changes from parleyd's diff are drawn on the nodes they
// touch (changed, added, count changed; removed members as struck-out rows under their parent), and their
// ancestors carry a marker so a change can be found from the root.
import { h, clear } from './dom.js';
import { ExactNumber, kindOf, stringify } from './json.js';
import { pathKey, pathText, shorten } from './format.js';

export const CHUNK = 100;
const LONG_STRING = 2000;
const AUTO_REVEAL = 30;

class TreeNode {
  constructor(tree, parent, path, label, value) {
    this.tree = tree;
    this.parent = parent;
    this.path = path;
    this.key = pathKey(path);
    this.label = label;
    this.value = value;
    this.kind = kindOf(value);
    this.expanded = false;
    // Children built: indices start..shown-1 (a window; long lists start at 0 and grow by chunks, and a reveal
    // deep inside one moves the window there instead of building everything before it).
    this.start = 0;
    this.shown = 0;
    this.built = []; // the child TreeNodes built, for forgetting them when the window moves
    this.keys = null; // member names of an object, when needed
    this.element = null;
    this.row = null;
    this.children = null;
  }

  get isContainer() {
    return this.kind === 'object' || this.kind === 'array';
  }

  get childCount() {
    if (this.kind === 'array') return this.value.length;
    if (this.kind === 'object') return this.memberNames().length;
    return 0;
  }

  memberNames() {
    if (!this.keys) this.keys = Object.keys(this.value);
    return this.keys;
  }
}

function preview(value, budget = 60) {
  const kind = kindOf(value);
  if (kind === 'array') {
    if (value.length === 0) return '[]';
    const parts = [];
    let used = 2;
    for (let i = 0; i < value.length && used < budget; i += 1) {
      const part = scalarPreview(value[i]);
      parts.push(part);
      used += part.length + 2;
    }
    return `[${parts.join(', ')}${parts.length < value.length ? ', …' : ''}]`;
  }
  if (kind === 'object') {
    const names = Object.keys(value);
    if (names.length === 0) return '{}';
    const parts = [];
    let used = 2;
    for (let i = 0; i < names.length && used < budget; i += 1) {
      const part = `${shorten(names[i], 24)}: ${scalarPreview(value[names[i]])}`;
      parts.push(part);
      used += part.length + 2;
    }
    return `{${parts.join(', ')}${parts.length < names.length ? ', …' : ''}}`;
  }
  return scalarPreview(value);
}

function scalarPreview(value) {
  const kind = kindOf(value);
  if (kind === 'array') return value.length ? '[…]' : '[]';
  if (kind === 'object') return Object.keys(value).length ? '{…}' : '{}';
  if (kind === 'string') return shorten(JSON.stringify(value), 30);
  return String(value);
}

function countText(node) {
  const n = node.childCount;
  if (node.kind === 'array') return `${n.toLocaleString()} ${n === 1 ? 'item' : 'items'}`;
  return `${n.toLocaleString()} ${n === 1 ? 'key' : 'keys'}`;
}

export class JsonTree {
  /**
   * onPin(path), onCopyPath(path), onCopyValue(path, value): the row buttons. rootLabel names the root row.
   */
  constructor({ onPin, onCopyPath, onCopyValue, rootLabel = 'state', actions = true } = {}) {
    this.onPin = onPin;
    this.onCopyPath = onCopyPath;
    this.onCopyValue = onCopyValue;
    this.rootLabel = rootLabel;
    this.actions = actions;
    this.element = h('div', { class: 'tree', role: 'tree' });
    this.nodes = new Map(); // path key -> TreeNode, for built nodes
    this.byElement = new WeakMap(); // row element -> TreeNode
    this.root = null;
    this.pinnedKey = null;
    this.setChanges([]);
    this.element.addEventListener('click', (event) => this.handleClick(event));
  }

  /** Shows `value`; `rootPath` is where it sits in the whole state (for a pinned subtree). */
  setValue(value, { rootPath = [], expandRoot = true } = {}) {
    clear(this.element);
    this.nodes.clear();
    this.root = new TreeNode(this, null, rootPath, this.rootLabel, value);
    this.element.appendChild(this.build(this.root));
    if (expandRoot && this.root.isContainer) this.expand(this.root);
  }

  setPinned(path) {
    const previous = this.pinnedKey && this.nodes.get(this.pinnedKey);
    this.pinnedKey = path ? pathKey(path) : null;
    if (previous) previous.row.classList.remove('pinned');
    const current = this.pinnedKey && this.nodes.get(this.pinnedKey);
    if (current) current.row.classList.add('pinned');
  }

  /** The changes of a diff (as GET /api/diff answers them), drawn on the tree. */
  setChanges(changes, { reveal = false } = {}) {
    this.changeByKey = new Map();
    this.ancestorsWithChanges = new Set();
    this.removedByParent = new Map();
    for (const change of changes) {
      const path = change.path;
      if (change.kind === 'removed') {
        const parentKey = pathKey(path.slice(0, -1));
        if (!this.removedByParent.has(parentKey)) this.removedByParent.set(parentKey, []);
        this.removedByParent.get(parentKey).push(change);
      } else {
        this.changeByKey.set(pathKey(path), change);
      }
      for (let i = change.kind === 'removed' ? path.length - 1 : path.length - 1; i >= 0; i -= 1) {
        this.ancestorsWithChanges.add(pathKey(path.slice(0, i)));
      }
    }
    for (const node of this.nodes.values()) {
      this.decorate(node);
      if (node.expanded) this.buildRemoved(node);
    }
    if (reveal && this.root) {
      for (const change of changes.slice(0, AUTO_REVEAL)) {
        const parent = change.path.slice(0, -1);
        if (!this.nearTheStart(change.path)) continue; // deep in a long list: the change list reveals it
        const node = this.expandTo(parent);
        if (node) this.expand(node);
      }
    }
  }

  /** True when every step of `path` is among the first chunks of its list (so showing it builds little). */
  nearTheStart(path) {
    let value = this.root.value;
    for (let depth = this.root.path.length; depth < path.length; depth += 1) {
      const component = path[depth];
      if (value === null || typeof value !== 'object') return true;
      const index = Array.isArray(value) ? component : Object.keys(value).indexOf(component);
      if (index >= CHUNK * 2) return false;
      value = value[component];
    }
    return true;
  }

  build(node) {
    this.nodes.set(node.key, node);
    const toggle = h('span', { class: node.isContainer ? 'toggle' : 'toggle leaf', 'aria-hidden': 'true' });
    const labelClass = typeof node.label === 'number' ? 'tkey index' : node.parent ? 'tkey' : 'tkey root';
    const label = h('span', { class: labelClass, text: node.label });
    const value = this.valueElement(node);
    const note = h('span', { class: 'tnote' });
    const row = h('div', { class: 'trow', dataset: { path: node.key } }, toggle, label, h('span', { class: 'tcolon', text: ':' }), value, note);
    if (this.actions) {
      row.appendChild(
        h(
          'span',
          { class: 'tactions' },
          h('button', { type: 'button', class: 'tbutton', dataset: { act: 'copy-path' }, title: 'Copy the path', text: 'path' }),
          h('button', { type: 'button', class: 'tbutton', dataset: { act: 'copy-value' }, title: 'Copy the value (JSON)', text: 'value' }),
          h('button', { type: 'button', class: 'tbutton', dataset: { act: 'pin' }, title: 'Pin: follow this value along the timeline', text: 'pin' }),
        ),
      );
    }
    row.title = pathText(node.path);
    const element = h('div', { class: `tnode kind-${node.kind}`, role: 'treeitem' }, row);
    if (node.isContainer) element.setAttribute('aria-expanded', 'false');
    node.element = element;
    node.row = row;
    this.byElement.set(row, node);
    if (this.pinnedKey === node.key) row.classList.add('pinned');
    this.decorate(node);
    return element;
  }

  valueElement(node) {
    const { kind, value } = node;
    if (node.isContainer) {
      return h('span', { class: 'tvalue container' }, h('span', { class: 'tcount', text: countText(node) }), h('span', { class: 'tpreview', text: ` ${preview(value)}` }));
    }
    if (kind === 'string') {
      const full = JSON.stringify(value);
      if (full.length <= LONG_STRING) return h('span', { class: 'tvalue string', text: full });
      const span = h('span', { class: 'tvalue string' }, full.slice(0, LONG_STRING));
      span.appendChild(
        h('button', {
          type: 'button',
          class: 'linkish',
          text: `… show all ${full.length.toLocaleString()} characters`,
          onclick: (event) => {
            event.stopPropagation();
            span.textContent = full;
          },
        }),
      );
      return span;
    }
    const textValue = value instanceof ExactNumber ? value.source : String(value);
    return h('span', { class: `tvalue ${kind}`, text: textValue });
  }

  decorate(node) {
    const row = node.row;
    if (!row) return;
    row.classList.remove('chg-changed', 'chg-typeChanged', 'chg-added', 'chg-countChanged', 'has-chg');
    const note = row.querySelector('.tnote');
    note.textContent = '';
    note.removeAttribute('title');
    const change = this.changeByKey.get(node.key);
    if (change) {
      row.classList.add(`chg-${change.kind}`);
      if (change.kind === 'changed' || change.kind === 'typeChanged') {
        note.textContent = `was ${shorten(change.old ?? '', 80)}`;
        note.title = `was ${shorten(change.old ?? '', 2000)}`;
      }
      else if (change.kind === 'added') note.textContent = 'added';
      else if (change.kind === 'countChanged') note.textContent = `count ${change.oldCount} → ${change.newCount}`;
    }
    if (this.ancestorsWithChanges.has(node.key) && node.isContainer) row.classList.add('has-chg');
  }

  buildRemoved(node) {
    for (const ghost of node.children.querySelectorAll(':scope > .tghost')) ghost.remove();
    const removed = this.removedByParent.get(node.key);
    if (!removed) return;
    for (const change of removed) {
      const last = change.path[change.path.length - 1];
      node.children.appendChild(
        h(
          'div',
          { class: 'tnode tghost', dataset: { path: pathKey(change.path) } },
          h(
            'div',
            { class: 'trow chg-removed', title: `${change.pathText ?? pathText(change.path)} removed` },
            h('span', { class: 'toggle leaf' }),
            h('span', { class: typeof last === 'number' ? 'tkey index' : 'tkey', text: last }),
            h('span', { class: 'tcolon', text: ':' }),
            h('span', { class: 'tvalue removed', text: shorten(change.old ?? '', 200) }),
            h('span', { class: 'tnote', text: 'removed' }),
          ),
        ),
      );
    }
  }

  expand(node) {
    if (!node.isContainer || node.expanded) return;
    node.expanded = true;
    node.element.setAttribute('aria-expanded', 'true');
    node.row.classList.add('open');
    if (!node.children) {
      node.children = h('div', { class: 'tchildren', role: 'group' });
      node.element.appendChild(node.children);
      this.showMore(node, CHUNK);
    } else {
      node.children.hidden = false;
    }
    this.buildRemoved(node);
  }

  collapse(node) {
    if (!node.expanded) return;
    node.expanded = false;
    node.element.setAttribute('aria-expanded', 'false');
    node.row.classList.remove('open');
    node.children.hidden = true;
  }

  toggle(node) {
    if (node.expanded) this.collapse(node);
    else this.expand(node);
  }

  buildChildren(node, from, to) {
    const fragment = document.createDocumentFragment();
    const names = node.kind === 'object' ? node.memberNames() : null;
    const built = [];
    for (let i = from; i < to; i += 1) {
      const label = names ? names[i] : i;
      const child = new TreeNode(this, node, [...node.path, label], label, node.value[label]);
      fragment.appendChild(this.build(child));
      built.push(child);
    }
    return { fragment, built };
  }

  /** Builds children up to index `until` (exclusive), then a "show more" row if some remain. */
  showMore(node, until) {
    const total = node.childCount;
    const end = Math.min(total, until);
    if (end > node.shown) {
      const { fragment, built } = this.buildChildren(node, node.shown, end);
      node.built.push(...built);
      node.shown = end;
      // After the last built member: before the "show more" row and the struck-out removed ones.
      const after = node.children.querySelector(':scope > .tmore.after') ?? node.children.querySelector(':scope > .tghost');
      node.children.insertBefore(fragment, after);
    }
    this.updateMoreRows(node);
  }

  /** Builds the members before the window's start (a chunk of them). */
  showPrevious(node) {
    const from = Math.max(0, node.start - CHUNK);
    const { fragment, built } = this.buildChildren(node, from, node.start);
    node.built.unshift(...built);
    node.start = from;
    const before = node.children.querySelector(':scope > .tmore.before');
    node.children.insertBefore(fragment, before ? before.nextSibling : node.children.firstChild);
    this.updateMoreRows(node);
  }

  /** Moves the window to the chunk holding `index`: what was built is forgotten. */
  showAround(node, index) {
    for (const child of node.built) this.forget(child);
    node.built = [];
    for (const element of node.children.querySelectorAll(':scope > .tnode:not(.tghost), :scope > .tmore')) element.remove();
    node.start = Math.floor(index / CHUNK) * CHUNK;
    node.shown = node.start;
    this.showMore(node, node.start + CHUNK);
  }

  forget(node) {
    this.nodes.delete(node.key);
    for (const child of node.built) this.forget(child);
  }

  updateMoreRows(node) {
    const total = node.childCount;
    for (const row of node.children.querySelectorAll(':scope > .tmore')) row.remove();
    const stop = (handler) => (event) => {
      event.stopPropagation();
      handler();
    };
    const range = h('span', { class: 'dim', text: ` (${node.start.toLocaleString()}–${(node.shown - 1).toLocaleString()} of ${total.toLocaleString()} shown) ` });
    if (node.start > 0) {
      node.children.insertBefore(
        h('div', { class: 'tmore before' },
          h('button', { type: 'button', class: 'linkish', text: `show ${Math.min(CHUNK, node.start).toLocaleString()} before`, onclick: stop(() => this.showPrevious(node)) }),
          node.shown >= total ? range : null),
        node.children.firstChild,
      );
    }
    if (node.shown < total) {
      const remaining = total - node.shown;
      const row = h('div', { class: 'tmore after' },
        h('button', { type: 'button', class: 'linkish', text: `show ${Math.min(CHUNK, remaining).toLocaleString()} more`, onclick: stop(() => this.showMore(node, node.shown + CHUNK)) }),
        range,
        remaining > CHUNK && remaining <= 20 * CHUNK && node.start === 0
          ? h('button', { type: 'button', class: 'linkish', text: 'show all', onclick: stop(() => this.showMore(node, total)) })
          : null);
      node.children.insertBefore(row, node.children.querySelector(':scope > .tghost'));
    }
  }

  childIndex(parentPath, component) {
    const parent = this.nodes.get(pathKey(parentPath));
    const value = parent ? parent.value : null;
    if (component === undefined || value === null || typeof value !== 'object') return -1;
    if (Array.isArray(value)) return typeof component === 'number' && component < value.length ? component : -1;
    const names = parent.memberNames();
    return names.indexOf(component);
  }

  /** Expands every node from the root down to `path` (and builds it); answers its node, or null. */
  expandTo(path) {
    if (!this.root) return null;
    const rootPath = this.root.path;
    if (path.length < rootPath.length) return null;
    let node = this.root;
    for (let depth = rootPath.length; depth < path.length; depth += 1) {
      if (!node.isContainer) return null;
      this.expand(node);
      const component = path[depth];
      const index = this.childIndex(node.path, component);
      if (index === -1) return null;
      if (index < node.start || index >= node.shown + CHUNK) this.showAround(node, index);
      else if (index >= node.shown) this.showMore(node, index + 1);
      node = this.nodes.get(pathKey([...node.path, component]));
      if (!node) return null;
    }
    return node;
  }

  /** Shows the node at `path` (or, for a removed member, its struck-out row): expanded to, scrolled to, flashed. */
  reveal(path, { removed = false } = {}) {
    let row = null;
    if (removed) {
      const parent = this.expandTo(path.slice(0, -1));
      if (parent && parent.children) row = parent.children.querySelector(`:scope > .tghost[data-path="${CSS.escape(pathKey(path))}"] > .trow`);
    } else {
      const node = this.expandTo(path);
      row = node ? node.row : null;
    }
    if (!row) return false;
    row.scrollIntoView({ block: 'center' });
    row.classList.remove('flash');
    void row.offsetWidth; // restart the animation
    row.classList.add('flash');
    return true;
  }

  collapseAll() {
    if (!this.root) return;
    for (const node of this.nodes.values()) if (node !== this.root) this.collapse(node);
  }

  handleClick(event) {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    const row = target.closest('.trow');
    const node = row ? this.byElement.get(row) : null;
    if (!node) return;
    const button = target.closest('button[data-act]');
    if (button) {
      event.stopPropagation();
      const act = button.dataset.act;
      if (act === 'copy-path' && this.onCopyPath) this.onCopyPath(node.path);
      else if (act === 'copy-value' && this.onCopyValue) this.onCopyValue(node.path, node.value);
      else if (act === 'pin' && this.onPin) this.onPin(node.path);
      return;
    }
    if (target.closest('button')) return;
    // A click toggles a container, unless the reader was selecting text.
    const selection = window.getSelection();
    if (selection && selection.type === 'Range' && row.contains(selection.anchorNode)) return;
    if (node.isContainer) this.toggle(node);
  }
}

export function valueText(value) {
  return stringify(value, 2);
}
