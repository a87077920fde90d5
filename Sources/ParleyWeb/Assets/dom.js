// Building DOM without HTML strings: every text goes in as a text node, so remote text (states, action texts,
// app and peer names) is always shown as the characters it is, never interpreted as markup.

/**
 * h('div', {class: 'row', title: text, onclick: fn, dataset: {seq: 3}}, child, 'text', [more children])
 * Attribute values are set with setAttribute (never `style`, which the Content-Security-Policy forbids inline);
 * `on…` keys add listeners; `text` sets textContent; `class` the class name; `props` assigns DOM properties.
 */
export function h(tag, attributes, ...children) {
  const element = document.createElement(tag);
  if (attributes) {
    for (const [key, value] of Object.entries(attributes)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') element.className = value;
      else if (key === 'text') element.textContent = String(value);
      else if (key === 'dataset') Object.assign(element.dataset, value);
      else if (key === 'props') Object.assign(element, value);
      else if (key.startsWith('on') && typeof value === 'function') element.addEventListener(key.slice(2), value);
      else if (key === 'style') throw new Error('inline styles are not allowed (CSP); use a class');
      else element.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
  return parent;
}

export function clear(element) {
  element.replaceChildren();
  return element;
}

export function text(value) {
  return document.createTextNode(String(value));
}

/** True when a key event comes from a place that takes text (so global shortcuts must leave it alone). */
export function isEditable(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
  if (tag === 'INPUT') return !['button', 'checkbox', 'radio', 'range', 'submit', 'reset', 'file'].includes(target.type);
  return false;
}
