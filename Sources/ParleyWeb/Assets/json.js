// Parsing states for display. JSON.parse turns numbers into doubles; where the text of a number says more than
// the double (1.10, 12345678901234567890) the parser keeps the text too, when the browser hands it over (the
// reviver's source text, Chromium 114+). Cheap: only numbers whose text differs get wrapped.

export class ExactNumber {
  constructor(value, source) {
    this.value = value;
    this.source = source;
  }

  toString() {
    return this.source;
  }
}

let sourceTextSupported = null;

function supportsSourceText() {
  if (sourceTextSupported === null) {
    sourceTextSupported = false;
    try {
      JSON.parse('1', (key, value, context) => {
        sourceTextSupported = Boolean(context && context.source === '1');
        return value;
      });
    } catch {
      sourceTextSupported = false;
    }
  }
  return sourceTextSupported;
}

function reviver(key, value, context) {
  if (typeof value === 'number' && context && context.source !== undefined && context.source !== String(value)) {
    return new ExactNumber(value, context.source);
  }
  return value;
}

/** Texts above this size are parsed without the reviver (speed first for very large states). */
const exactLimit = 8 * 1024 * 1024;

export function parseState(textValue) {
  if (textValue.length <= exactLimit && supportsSourceText()) return JSON.parse(textValue, reviver);
  return JSON.parse(textValue);
}

export const kindOf = (value) => {
  if (value === null) return 'null';
  if (value instanceof ExactNumber) return 'number';
  if (Array.isArray(value)) return 'array';
  return typeof value; // object, string, number, boolean
};

/** The JSON text of a value (compact), with exact number text. */
export function stringify(value, indent = 0) {
  let marked = false;
  const nonce = Math.random().toString(36).slice(2);
  const raw = JSON.stringify(
    value,
    (key, v) => {
      if (!(v instanceof ExactNumber)) return v;
      marked = true;
      return `\u0000${nonce}:${v.source}`;
    },
    indent || undefined,
  );
  if (raw === undefined) return 'undefined';
  if (!marked) return raw;
  // The marker string comes out as "\u0000NONCE:TEXT"; the number text has no quote or backslash.
  return raw.split(`"\\u0000${nonce}:`).map((part, index) => (index === 0 ? part : part.replace('"', ''))).join('');
}

/** The value at `path`, or `undefined` if the path does not lead anywhere. */
export function valueAt(root, path) {
  let value = root;
  for (const component of path) {
    if (value === null || typeof value !== 'object' || value instanceof ExactNumber) return undefined;
    if (Array.isArray(value)) {
      if (typeof component !== 'number' || component >= value.length) return undefined;
      value = value[component];
    } else {
      if (!Object.prototype.hasOwnProperty.call(value, component)) return undefined;
      value = value[component];
    }
  }
  return value;
}
