// The list of changes between two entries, as parleyd's diff answers them (never computed here).
import { h } from './dom.js';
import { shorten } from './format.js';

const KIND_LABEL = {
  changed: 'changed',
  typeChanged: 'type',
  added: 'added',
  removed: 'removed',
  countChanged: 'count',
};

const LIST_LIMIT = 500;

function describe(change) {
  switch (change.kind) {
    case 'changed':
    case 'typeChanged':
      return [
        h('span', { class: 'old', title: shorten(change.old ?? '', 2000), text: shorten(change.old ?? '', 160) }),
        h('span', { class: 'arrow', text: ' → ' }),
        h('span', { class: 'new', title: shorten(change.new ?? '', 2000), text: shorten(change.new ?? '', 160) }),
      ];
    case 'added':
      return [h('span', { class: 'new', text: shorten(change.new ?? '', 200) })];
    case 'removed':
      return [h('span', { class: 'old', text: shorten(change.old ?? '', 200) })];
    case 'countChanged':
      return [h('span', { text: `${change.oldCount} → ${change.newCount} ${change.newCount === 1 ? 'item' : 'items'}` })];
    default:
      return [];
  }
}

/** A list of `changes`; clicking one calls onReveal(change). */
export function changeList(changes, onReveal) {
  const list = h('ul', { class: 'changes' });
  const add = (from, to) => {
    for (const change of changes.slice(from, to)) {
      list.appendChild(
        h(
          'li',
          { class: `change chg-${change.kind}`, dataset: { path: JSON.stringify(change.path) } },
          h('button', { type: 'button', class: 'change-path', title: 'Show in the tree', text: change.pathText ?? '', onclick: () => onReveal(change) }),
          h('span', { class: `badge kind-${change.kind}`, text: KIND_LABEL[change.kind] ?? change.kind }),
          h('span', { class: 'change-values' }, describe(change)),
        ),
      );
    }
  };
  add(0, LIST_LIMIT);
  if (changes.length > LIST_LIMIT) {
    const more = h('li', { class: 'more' }, h('button', {
      type: 'button',
      class: 'linkish',
      text: `show all ${changes.length.toLocaleString()} changes`,
      onclick: () => {
        more.remove();
        add(LIST_LIMIT, changes.length);
      },
    }));
    list.appendChild(more);
  }
  return list;
}
