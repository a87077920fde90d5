// The page's views and the live stream's event names: the one list of them. The page imports it (router.js,
// live.js); parleyd reads the object below from its built-in copy (WebPageManifest.swift), serves the page at
// every view's path and sends only these events. So it stays JSON after `export default`: double quotes, no
// comments inside, no trailing commas.
//
// A view's path names its parts with `:name`: numbers, or hexadecimal digits for those the view lists in `hex`
// (kept as text). `query` lists the numbers it may also take from the query string.
export default {
  "views": [
    { "name": "sessions", "path": "/" },
    { "name": "peers", "path": "/peers" },
    { "name": "drawers", "path": "/drawers" },
    { "name": "traces", "path": "/traces", "query": ["session"] },
    { "name": "trace", "path": "/traces/:trace", "hex": ["trace"], "query": ["span"] },
    { "name": "session", "path": "/sessions/:id" },
    { "name": "entry", "path": "/sessions/:id/entries/:seq", "query": ["diff"] },
    { "name": "log", "path": "/sessions/:id/logs/:log" },
    { "name": "span", "path": "/sessions/:id/spans/:span" }
  ],
  "liveEvents": ["entry", "telemetry", "session", "peers", "drawer"]
};
