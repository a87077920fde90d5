// Formatting for people: times in local time, sizes, state paths (as parleyd's diff prints them).

const pad = (n, width = 2) => String(n).padStart(width, '0');

/** `2026-11-25 18:10:51` in local time; '' for null. */
export function dateTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `2026-11-25 18:10:51.035` in local time. */
export function fullTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? '');
  return `${dateTime(iso)}.${pad(d.getMilliseconds(), 3)}`;
}

/** `18:10:51.035` in local time. */
export function clockTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso ?? '');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A tooltip: the local time in full and the UTC time parleyd stored. */
export function timeTitle(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${dateTime(iso)}.${pad(d.getMilliseconds(), 3)} local — ${iso}`;
}

export function bytes(count) {
  if (count === null || count === undefined) return '';
  if (count < 1024) return `${count} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = count / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function count(n, singular, plural = `${singular}s`) {
  return `${n.toLocaleString()} ${n === 1 ? singular : plural}`;
}

// A member name prints bare unless it could be misread (StatePath.Component.isPlain in parleyd).
const notPlain = /[\s"\\:.[\]\u0000-\u001f\u007f]/u;

/** `items[2].title`, `["window size"].width`, `(root)`: the path text parleyd's diff uses. */
export function pathText(path) {
  if (path.length === 0) return '(root)';
  let result = '';
  for (const component of path) result = appendPath(result, component);
  return result;
}

/** The path text one step further down (from '' at the root). */
export function appendPath(textValue, component) {
  if (typeof component === 'number') return `${textValue}[${component}]`;
  if (component === '' || notPlain.test(component)) return `${textValue}[${JSON.stringify(component)}]`;
  return textValue ? `${textValue}.${component}` : component;
}

/** A stable key for a path (a Map key): its JSON. */
export function pathKey(path) {
  return JSON.stringify(path);
}

export function isPrefix(prefix, path) {
  if (prefix.length > path.length) return false;
  for (let i = 0; i < prefix.length; i += 1) if (prefix[i] !== path[i]) return false;
  return true;
}

/** Cuts long text for a one-line preview. */
export function shorten(value, max = 120) {
  const s = String(value);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export function shortID(id) {
  return id ? String(id).slice(0, 8) : '';
}
