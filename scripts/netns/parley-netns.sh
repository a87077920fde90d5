#!/bin/sh
# A two-host lab for testing discovery against a real avahi-daemon without sending a single multicast packet on the
# machine's own network.
#
# Each "host" is a network namespace (its own interfaces, its own mDNS traffic) plus a process tree started with
# `unshare --mount --uts --pid --fork`: a private tmpfs on /run (so each host has its own D-Bus system bus socket and
# avahi-daemon pid file), its own host name, and its own PID namespace, whose first process is `sleep infinity`.
# Killing that first process ends every process of the host (dbus-daemon, avahi-daemon, whatever ran inside).
# The two hosts are joined by a veth pair: 10.77.<n>.1/24 on host a, 10.77.<n>.2/24 on host b, plus the IPv6
# link-local addresses the kernel assigns by itself (with --ipv6-only, no IPv4 address at all).
#
# Needs root, iproute2, util-linux (unshare, nsenter), dbus-daemon and avahi-daemon.
#
# Usage:
#   parley-netns.sh check                        exit 0 if a lab can be built here, else print why and exit 1
#   parley-netns.sh up LAB [--ipv6-only|--ipv4-only] [--no-avahi] [--owner PID]
#                                                build hosts LAB-a and LAB-b (LAB: letters, digits, '-', at most 12);
#                                                with --owner, the lab belongs to process PID (see sweep)
#   parley-netns.sh exec LAB a|b CMD [ARG...]    run CMD inside a host (its network, mounts, host name and PIDs)
#   parley-netns.sh avahi LAB a|b start|stop|restart
#   parley-netns.sh addr LAB a|b                 print the host's IPv6 link-local address on its veth
#   parley-netns.sh link LAB a|b down|up         take the host's veth down or bring it up (the other end loses
#                                                or regains its carrier)
#   parley-netns.sh readdress LAB a|b            move the host's IPv4 address to the next one in its /24; prints it
#   parley-netns.sh blackhole LAB a|b on|off     silently drop what the host sends to the other host's IPv4 address
#                                                (a cut with no carrier loss, no FIN, no reset: only heartbeats tell)
#   parley-netns.sh down LAB                     kill both hosts and delete the namespaces (idempotent)
#   parley-netns.sh list                         labs still present
#   parley-netns.sh sweep                        take down every lab whose owner process has ended (a test run that
#                                                was killed before it could tear its labs down)
#
# The lab's state (the first process of each host, as a PID of this machine) is kept in $PARLEY_NETNS_STATE
# (default /tmp/parley-netns/LAB). Nothing outside the two namespaces is changed except that directory.
set -eu

STATE_ROOT=${PARLEY_NETNS_STATE:-/tmp/parley-netns}

die() { echo "parley-netns: $*" >&2; exit 1; }

. "$(dirname "$0")/lab-host.sh"

avahi_config() { # written inside the host's private /run
    cat <<'EOF'
[server]
use-ipv4=yes
use-ipv6=yes
enable-dbus=yes
disallow-other-stacks=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
publish-aaaa-on-ipv4=yes
publish-a-on-ipv6=no
[reflector]
enable-reflector=no
[rlimits]
EOF
}

avahi_start() { # LAB HOST
    avahi_launch "$1" "$2"
}

avahi_stop() { # LAB HOST
    in_host "$1" "$2" avahi-daemon --kill 2>/dev/null || true
    i=0
    while in_host "$1" "$2" avahi-daemon --check 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 50 ] || die "avahi-daemon on host $2 still running after 5 s"
        sleep 0.1
    done
}

start_host() { # LAB HOST NAME
    lab=$1; h=$2; name=$3
    ns="$lab-$h"
    # The first process of the host: private /run, own host name, own D-Bus system bus, then sleep until killed.
    ip netns exec "$ns" unshare --mount --uts --pid --fork --propagation private --mount-proc \
        sh -c '
            mount -t tmpfs -o mode=0755 parley-run /run &&
            mkdir -p /run/dbus /run/avahi-daemon &&
            hostname "$0" &&
            dbus-daemon --system --fork &&
            exec sleep infinity
        ' "$name" </dev/null >/dev/null 2>&1 &
    outer=$!
    # `unshare --fork` is the parent of the host's PID 1; record that child.
    i=0; pid=""
    while [ -z "$pid" ]; do
        pid=$(pgrep -P "$outer" 2>/dev/null | head -n 1 || true)
        [ -n "$pid" ] && break
        i=$((i + 1)); [ $i -lt 100 ] || die "host $h did not start"
        sleep 0.05
    done
    echo "$pid" > "$STATE_ROOT/$lab/$h.pid"
    # Wait for the system bus socket (and the sleep that proves the setup finished).
    i=0
    until in_host "$lab" "$h" sh -c 'test -S /run/dbus/system_bus_socket && pgrep -x sleep >/dev/null' 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || die "D-Bus did not come up on host $h"
        sleep 0.05
    done
    avahi_config | in_host "$lab" "$h" sh -c 'cat > /run/parley-avahi.conf'
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
check)
    [ "$(id -u)" -eq 0 ] || { echo "needs root (to create network namespaces)"; exit 1; }
    for tool in ip unshare nsenter dbus-daemon avahi-daemon pgrep; do
        command -v "$tool" >/dev/null 2>&1 || { echo "'$tool' is not installed"; exit 1; }
    done
    probe="parley-chk-$$"
    if ! ip netns add "$probe" 2>/dev/null; then echo "cannot create network namespaces (ip netns add failed)"; exit 1; fi
    ok=1
    ip netns exec "$probe" unshare --mount --uts --pid --fork --propagation private true 2>/dev/null || ok=0
    ip netns del "$probe" 2>/dev/null || true
    [ $ok -eq 1 ] || { echo "cannot create mount/UTS/PID namespaces (unshare failed)"; exit 1; }
    exit 0
    ;;
up)
    need_lab "${1:-}"; lab=$1; shift
    v6only=0; v4only=0; avahi=1; owner=
    while [ $# -gt 0 ]; do
        case "$1" in
        --ipv6-only) v6only=1;;
        --ipv4-only) v4only=1;;
        --no-avahi) avahi=0;;
        --owner) [ $# -ge 2 ] || die "--owner needs a PID"; owner=$2; shift;;
        *) die "unknown option $1";;
        esac
        shift
    done
    mkdir -p "$STATE_ROOT/$lab"
    # The owner as PID and start time, so that a PID reused by another process does not keep the lab alive.
    [ -n "$owner" ] && echo "$owner $(start_time "$owner")" > "$STATE_ROOT/$lab/owner"
    # A subnet derived from the lab name so that concurrent labs do not share addresses (they are isolated anyway).
    n=$(( $(printf '%s' "$lab" | cksum | cut -d' ' -f1) % 250 + 1 ))
    ip netns add "$lab-a"
    ip netns add "$lab-b"
    ip link add "${lab}a" type veth peer name "${lab}b"
    ip link set "${lab}a" netns "$lab-a"
    ip link set "${lab}b" netns "$lab-b"
    for h in a b; do
        ns="$lab-$h"
        ip -n "$ns" link set lo up
        if [ $v6only -eq 1 ]; then
            ip netns exec "$ns" sysctl -qw "net.ipv6.conf.${lab}$h.disable_ipv6=0"
        else
            [ $h = a ] && host=1 || host=2
            ip -n "$ns" addr add "10.77.$n.$host/24" dev "${lab}$h"
            [ $v4only -eq 1 ] && ip netns exec "$ns" sysctl -qw "net.ipv6.conf.${lab}$h.disable_ipv6=1"
        fi
        ip -n "$ns" link set "${lab}$h" multicast on up
    done
    start_host "$lab" a hosta
    start_host "$lab" b hostb
    # Wait until both veth ends have a usable (non-tentative) IPv6 link-local address: avahi only announces on
    # addresses that exist when it looks.
    for h in a b; do
        [ $v4only -eq 1 ] && break
        i=0
        until ip -n "$lab-$h" -6 addr show dev "${lab}$h" scope link 2>/dev/null | grep -q 'inet6' &&
              ! ip -n "$lab-$h" -6 addr show dev "${lab}$h" 2>/dev/null | grep -q tentative; do
            i=$((i + 1)); [ $i -lt 100 ] || die "no IPv6 link-local address on host $h"
            sleep 0.1
        done
    done
    if [ $avahi -eq 1 ]; then
        avahi_start "$lab" a
        avahi_start "$lab" b
    fi
    ;;
exec)
    need_lab "${1:-}"; lab=$1; h=${2:-}; shift 2
    need_host "$h" a b
    in_host "$lab" "$h" "$@"
    ;;
avahi)
    need_lab "${1:-}"; lab=$1; h=${2:-}; action=${3:-}
    need_host "$h" a b
    case "$action" in
    start) avahi_start "$lab" "$h";;
    stop) avahi_stop "$lab" "$h";;
    restart) avahi_stop "$lab" "$h"; avahi_start "$lab" "$h";;
    *) die "avahi action must be start, stop or restart";;
    esac
    ;;
addr)
    need_lab "${1:-}"; lab=$1; h=${2:-}
    ip -n "$lab-$h" -6 addr show dev "${lab}$h" scope link | sed -n 's/.*inet6 \([^/]*\).*/\1/p' | head -n 1
    ;;
link)
    need_lab "${1:-}"; lab=$1; h=${2:-}
    need_host "$h" a b
    set_link "$lab-$h" "${lab}$h" "${3:-}"
    ;;
readdress)
    need_lab "${1:-}"; lab=$1; h=${2:-}
    need_host "$h" a b
    old=$(host_addr "$lab" "$h"); [ -n "$old" ] || die "host $h of lab $lab has no IPv4 address"
    readdress_iface "$lab-$h" "${lab}$h" "$old" 24
    ;;
blackhole)
    need_lab "${1:-}"; lab=$1; h=${2:-}
    case "$h" in a) other=b;; b) other=a;; *) die "host must be a or b";; esac
    target=$(host_addr "$lab" "$other"); [ -n "$target" ] || die "host $other of lab $lab has no IPv4 address"
    case "${3:-}" in
    on) ip -n "$lab-$h" route add blackhole "$target/32";;
    off) ip -n "$lab-$h" route del blackhole "$target/32";;
    *) die "blackhole takes on or off";;
    esac
    ;;
down)
    need_lab "${1:-}"; lab=$1
    for h in a b; do kill_host "$lab" "$h"; done
    rm -rf "${STATE_ROOT:?}/$lab"
    ;;
list)
    ls "$STATE_ROOT" 2>/dev/null || true
    ;;
sweep)
    sweep_labs "$0"
    ;;
*)
    sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] && exit 0 || exit 2
    ;;
esac
