"""Python tools shared by Parley's test suites, benchmarks and scripts.

  parley_tools.wire      a Parley peer written from docs/protocol.md alone (framing, hello, messages, the
                         shared-secret handshake)
  parley_tools.parleyd   starts a parleyd and waits for its readiness line (docs/operations.md, Logs)
  parley_tools.browser   the web debugger's browser tests: headless Chromium, an app in the original framing,
                         PNG screenshots

Importable without installing it under pytest (pytest.ini puts python/ on the path); scripts/require-packages
installs it in editable mode for the scripts and benchmarks (`pip install --editable python`).
"""
