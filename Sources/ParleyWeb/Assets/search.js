// Search in a state by path or value: every node whose path text (`items[2].title`) or whose value (strings,
// numbers, booleans, null, as shown) contains the query, case-insensitively. Answers at most `limit` results.
import { ExactNumber, kindOf } from './json.js';
import { appendPath } from './format.js';

export function searchState(root, query, { limit = 200 } = {}) {
  const needle = query.trim().toLowerCase();
  const results = [];
  if (!needle) return { results, truncated: false };
  // Depth first, in document order: a stack of [value, path, path text].
  const stack = [[root, [], '']];
  while (stack.length) {
    const [value, path, text] = stack.pop();
    const kind = kindOf(value);
    const pathMatches = path.length > 0 && text.toLowerCase().includes(needle);
    if (kind === 'object' || kind === 'array') {
      if (pathMatches) results.push({ path, value, on: 'path' });
      const names = kind === 'array' ? null : Object.keys(value);
      const count = kind === 'array' ? value.length : names.length;
      for (let i = count - 1; i >= 0; i -= 1) {
        const component = names ? names[i] : i;
        const childPath = [...path, component];
        stack.push([value[component], childPath, appendPath(text, component)]);
      }
    } else {
      const shown = kind === 'string' ? value : value instanceof ExactNumber ? value.source : String(value);
      if (pathMatches || shown.toLowerCase().includes(needle)) results.push({ path, value, on: pathMatches ? 'path' : 'value' });
    }
    if (results.length >= limit) return { results, truncated: stack.length > 0 };
  }
  return { results, truncated: false };
}
