// Copying: the asynchronous clipboard where the page may use it, a hidden textarea and execCommand otherwise
// (plain http on a non-loopback address is not a secure context).
import { toast, showError } from './notify.js';

function fallbackCopy(textValue) {
  const area = document.createElement('textarea');
  area.value = textValue;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.appendChild(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand('copy');
  } finally {
    area.remove();
  }
  if (!copied) throw new Error('the browser refused to copy');
}

export async function copyText(textValue, what = 'text') {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(textValue);
      } catch {
        fallbackCopy(textValue);
      }
    } else {
      fallbackCopy(textValue);
    }
    toast(`Copied ${what}`);
  } catch (error) {
    showError(error, `Could not copy ${what}`);
  }
}
