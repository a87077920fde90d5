#!/usr/bin/env python3
"""A DNS-SD peer written with python-zeroconf, for interop tests of Parley's discovery.

Run it only inside a lab host (scripts/netns/parley-netns.sh exec LAB a|b ...): it sends mDNS itself.

  zeroconf-peer.py advertise NAME PORT ADDRESS [KEY=VALUE ...]   register NAME._debug._tcp.local. until stdin closes
  zeroconf-peer.py browse                                        print every resolved _debug._tcp service

Prints one JSON object per line, shaped like ParleyDiscoveryProbe's events:
  {"event": "registered", "name": ...}
  {"event": "found", "service": {"name", "type", "domain", "host", "port", "txt": [[key, value]...], "addresses": [...]}}
"""
import json
import sys
import threading
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceListener, Zeroconf

TYPE = "_debug._tcp.local."


def emit(event, **fields):
    fields.update(event=event, wallMs=time.time() * 1000)
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def wait_for_stdin_eof():
    for _ in sys.stdin:
        pass


def advertise(name, port, address, pairs):
    properties = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        properties[key] = value
    info = ServiceInfo(
        TYPE,
        f"{name}.{TYPE}",
        port=int(port),
        properties=properties,
        server="zcpeer.local.",
        parsed_addresses=[address],
    )
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    try:
        zc.register_service(info)
        emit("registered", name=name)
        wait_for_stdin_eof()
        zc.unregister_service(info)
    finally:
        zc.close()


class Listener(ServiceListener):
    def __init__(self):
        self.seen = set()
        self.lock = threading.Lock()

    def _resolve(self, zc, type_, name, event):
        info = zc.get_service_info(type_, name, timeout=3000)
        if info is None:
            return
        txt = []
        # ServiceInfo.text is the raw TXT rdata, in wire order.
        raw = info.text or b""
        i = 0
        while i < len(raw):
            length = raw[i]
            string = raw[i + 1 : i + 1 + length].decode("utf-8", "replace")
            i += 1 + length
            key, sep, value = string.partition("=")
            txt.append([key, value if sep else None])
        service = {
            "name": name[: -len("." + type_)] if name.endswith("." + type_) else name,
            "type": type_.rstrip("."),
            "domain": "local",
            "host": (info.server or "").rstrip("."),
            "port": info.port,
            "txt": txt,
            "addresses": [
                {"host": a, "family": "ipv6" if ":" in a else "ipv4", "interfaceIndex": 0, "interface": None,
                 "linkLocal": a.startswith("fe80"), "connect": a}
                for a in info.parsed_addresses()
            ],
        }
        emit(event, service=service)

    def add_service(self, zc, type_, name):
        self._resolve(zc, type_, name, "found")

    def update_service(self, zc, type_, name):
        self._resolve(zc, type_, name, "updated")

    def remove_service(self, zc, type_, name):
        emit("removed", name=name)


def browse():
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    try:
        ServiceBrowser(zc, TYPE, Listener())
        emit("browsing")
        wait_for_stdin_eof()
    finally:
        zc.close()


def main(argv):
    if len(argv) >= 4 and argv[0] == "advertise":
        advertise(argv[1], argv[2], argv[3], argv[4:])
    elif argv == ["browse"]:
        browse()
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
