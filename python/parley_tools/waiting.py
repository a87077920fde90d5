"""Waiting for a state that announces no change of its own (a peer list, a drawer value): checked again and
again up to a deadline. Prefer an event where there is one."""
from __future__ import annotations

import time


def wait_until(predicate, what: str, timeout: float, interval: float = 0.05):
    """predicate()'s first truthy value, checked every `interval` seconds; AssertionError naming `what` after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
