// Messages for people: toasts for outcomes and errors, and a modal confirmation for what cannot be undone.
import { h } from './dom.js';

function area() {
  return document.getElementById('toasts');
}

/** Shows a message; errors stay until dismissed, other messages for a few seconds. */
export function toast(message, { kind = 'info', detail = '' } = {}) {
  const close = () => element.remove();
  const element = h(
    'div',
    { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('div', { class: 'toast-body' }, h('strong', { text: message }), detail ? h('div', { class: 'toast-detail', text: detail }) : null),
    h('button', { class: 'toast-close', type: 'button', title: 'Dismiss', 'aria-label': 'Dismiss', onclick: close, text: '×' }),
  );
  area().appendChild(element);
  if (kind !== 'error') setTimeout(close, 4000);
  return element;
}

/** An error from the API (title + detail) or anything else thrown, shown as a toast. */
export function showError(error, context = '') {
  if (error && error.name === 'AbortError') return;
  const title = error && error.title ? error.title : (error && error.message) || String(error);
  const detail = error && error.title ? error.detail : '';
  toast(context ? `${context}: ${title}` : title, { kind: 'error', detail });
}

/** An inline panel for a view that could not load. */
export function errorPanel(error, context = '') {
  const title = error && error.title ? error.title : (error && error.message) || String(error);
  const detail = error && error.title ? error.detail : '';
  return h(
    'div',
    { class: 'error-panel', role: 'alert' },
    h('strong', { text: context ? `${context}: ${title}` : title }),
    detail ? h('p', { text: detail }) : null,
  );
}

/** Asks before doing something; resolves true for OK. */
export function confirmAction({ title, message, ok = 'OK', danger = false }) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = message;
  const okButton = document.getElementById('confirm-ok');
  okButton.textContent = ok;
  okButton.classList.toggle('danger', danger);
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
    okButton.focus();
  });
}
