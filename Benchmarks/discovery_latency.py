#!/usr/bin/env python3
"""Discovery latency: from starting a Parley node on lab host A to a connected, handshaken peer on host B,
measured beside `avahi-browse -r` on host B in the same run, so the figure Parley adds to Avahi's own resolve
time is visible. Uses the two-host namespace lab (needs root); nothing is sent on the machine's own network.

    swift build -c release --product parley-test-peer && sudo Benchmarks/discovery_latency.py [ROUNDS]
"""
import json, os, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_SCRIPT = os.path.join(ROOT, "scripts/netns/parley-netns.sh")
PEER = os.path.join(ROOT, ".build/release/parley-test-peer")
LAB = "pbench%d" % (os.getpid() % 10000)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def lab(*args, **kwargs):
    return subprocess.run([LAB_SCRIPT, *args], check=True, capture_output=True, text=True, **kwargs)


def watch(process, lines):
    """Appends (arrival time in ms, line) for every output line."""
    for line in process.stdout:
        lines.append((time.time() * 1000, line.rstrip("\n")))


def spawn(host, *command):
    process = subprocess.Popen([LAB_SCRIPT, "exec", LAB, host, *command], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, bufsize=1)
    lines = []
    threading.Thread(target=watch, args=(process, lines), daemon=True).start()
    return process, lines


def wait_for(lines, predicate, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for stamp, line in list(lines):
            if predicate(line):
                return stamp, line
        time.sleep(0.005)
    raise TimeoutError("timed out")


def main():
    if not os.path.exists(PEER):
        sys.exit("build first: swift build -c release --product parley-test-peer")
    lab("up", LAB)
    results = []
    try:
        browse, browse_lines = spawn("b", "avahi-browse", "-r", "-p", "_debug._tcp")
        bravo, bravo_lines = spawn("b", PEER, "discover", "Bravo")
        wait_for(bravo_lines, lambda l: '"ready"' in l)
        for round_number in range(ROUNDS):
            name = "Alpha%d" % round_number
            started = time.time() * 1000
            # A only advertises; B browses and dials, so the figure is B's discovery, not A dialling B.
            alpha, alpha_lines = spawn("a", PEER, "discover", name, "--no-connect")
            resolved, _ = wait_for(browse_lines, lambda l: l.startswith("=;") and (";%s;" % name) in l)
            connected, line = wait_for(bravo_lines, lambda l: '"connected"' in l and ('"%s"' % name) in l)
            results.append((resolved - started, connected - started))
            print("round %d: avahi-browse resolved after %.0f ms, Parley connected+handshaken after %.0f ms (adds %+.0f ms)"
                  % (round_number + 1, resolved - started, connected - started, connected - resolved), flush=True)
            pid = json.loads(wait_for(alpha_lines, lambda l: '"ready"' in l)[1])["pid"]
            subprocess.run([LAB_SCRIPT, "exec", LAB, "a", "kill", "-KILL", str(pid)], check=True)
            alpha.wait()
            # Let B notice and Avahi withdraw the service before the next round.
            wait_for(bravo_lines, lambda l: '"disconnected"' in l and ('"%s"' % name) in l)
            time.sleep(1.0)
        browse.kill()
        bravo.kill()
    finally:
        lab("down", LAB)
    avahi = sorted(r[0] for r in results)
    parley = sorted(r[1] for r in results)
    added = sorted(r[1] - r[0] for r in results)
    median = lambda values: values[len(values) // 2]
    print("median over %d rounds: avahi-browse -r %.0f ms, Parley %.0f ms, Parley adds %.0f ms (ratio %.3f)"
          % (len(results), median(avahi), median(parley), median(added), median(parley) / median(avahi)))


if __name__ == "__main__":
    main()
