#!/usr/bin/env python3
"""The receiving side of Parley alone: a Python sender writes pre-encoded 109-byte `bench.Raw` messages into
`parley-bench receiver` as fast as the socket takes them (1 000 frames per sendall), for SECONDS, then asks
the receiver how many it handled. The Python side does no per-message work, so the figure is the bound of one
Parley receiver (its event loop at 100 %), without a Parley sender sharing the two cores.

    swift build -c release --product parley-bench --scratch-path .build-release
    Benchmarks/receiver_flood.py .build-release/release/parley-bench [SECONDS] [--typed]

--typed sends the same payload as `bench.Small`, which the receiver decodes with JSONDecoder into its
`SmallMessage` before its handler runs: the receiving half of the typed path alone, to set beside
`JSONDecoder alone` from parley-bench. Prints the rate. Nothing is asserted.
"""
import json
import subprocess
import sys
import time

import os
# The project's own Python package, from this checkout (scripts/require-packages also installs it).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "python"))
from parley_tools import wire

PAYLOAD = (b'{"id":42,"title":"Buy oat milk and a loaf of sourdough",'
           b'"tags":["groceries","weekend","urgent"],"done":false}')


def main() -> None:
    arguments = [argument for argument in sys.argv[1:] if argument != "--typed"]
    type_name = "bench.Small" if "--typed" in sys.argv else "bench.Raw"
    bench = arguments[0]
    seconds = float(arguments[1]) if len(arguments) > 1 else 4.0
    receiver = subprocess.Popen([bench, "receiver"], stdout=subprocess.PIPE)
    try:
        ready = receiver.stdout.readline().decode()
        port = int(ready.split("port=")[1].split()[0])
        connection = wire.handshake(wire.connect_tcp(port))
        batch = b"".join(wire.frame(wire.message_body(type_name, PAYLOAD, id=n + 1)) for n in range(1000))
        connection.sock.settimeout(None)
        start = time.monotonic()
        sent = 0
        while time.monotonic() - start < seconds:
            connection.sock.sendall(batch)
            sent += 1000
        connection.sock.settimeout(60)
        # Behind every message on the same connection: answered once all of them are handled.
        answer = connection.recv_answer(connection.send_message("bench.CountQuery", b"{}", request=True), timeout=60)
        elapsed = time.monotonic() - start
        handled = json.loads(answer.payload)["messages"]
        print(f"receiver alone ({type_name}): {handled} of {sent} handled in {elapsed:.2f} s: {handled / elapsed:,.0f} msgs/s")
    finally:
        receiver.kill()
        receiver.wait()


if __name__ == "__main__":
    main()
