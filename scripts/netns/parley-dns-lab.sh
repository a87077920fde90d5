#!/bin/sh
# A routed three-host lab for service discovery across two subnets, without a single packet on the machine's own
# network. It comes in two modes, the two recipes of docs/discovery.md ("Beyond one link"):
#   wide-area (the default)  DNS-SD over unicast DNS (RFC 6763), services registered by DNS UPDATE (RFC 2136), signed
#                            with TSIG, in BIND 9 on the router;
#   --reflector              no DNS server: avahi-daemon on the router repeats mDNS between the two subnets.
#
# Each "host" is a network namespace plus a process tree started with `unshare --mount --uts --pid --fork`: a
# private tmpfs on /run, its own host name and its own PID namespace, whose first process is `sleep infinity`.
# Killing that first process ends every process of the host. The hosts:
#   LAB-r  the router: IPv4 forwarding on, 10.X.1.1/24 (LABra) towards a and 10.X.2.1/24 (LABrb) towards b (X
#          derived from LAB). Its /etc/resolv.conf (bind-mounted inside its own mount namespace) names 127.0.0.1.
#          Wide-area: it runs BIND 9 (`named -4`, as root: no -u), authoritative for the zone parley.test, without
#          recursion, listening on 10.X.1.1, 10.X.2.1 and 127.0.0.1; updates are allowed when signed with the TSIG
#          key parley-update (hmac-sha256, made by tsig-keygen).
#          --reflector: no named, but avahi-daemon with enable-reflector=yes on LABra and LABrb (the configuration
#          reflector_config writes: the router runs no D-Bus system bus, so enable-dbus=no).
#   LAB-a  10.X.1.2/24, default route via 10.X.1.1;   LAB-b  10.X.2.2/24, default route via 10.X.2.1.
#          Each runs its own D-Bus system bus and avahi-daemon. Wide-area: with enable-wide-area=yes and
#          browse-domains=parley.test; its /etc/resolv.conf (a file in its private /run, bind-mounted inside its own
#          mount namespace; the machine's /etc/resolv.conf is not touched) names the router's address on its subnet,
#          which is where avahi sends its wide-area (unicast DNS) queries. --reflector: with enable-wide-area=no and
#          no browse domain, so that mDNS through the reflector is the only way one host learns of the other.
# Wide-area, the router routes unicast only: it runs no mDNS reflector and no multicast routing, and Linux forwards
# no multicast without a multicast routing daemon, so a and b never see each other's mDNS (link-local) services.
# The IPv6 link-local addresses the kernel assigns to each veth stay, as in parley-netns.sh.
#
# Needs root, iproute2, util-linux (unshare, nsenter), dbus-daemon, avahi-daemon and, from Debian's bind9 and
# bind9-dnsutils packages, named, tsig-keygen, dig and nsupdate. The bind9 package's own service is not used.
#
# Usage:
#   parley-dns-lab.sh check                      exit 0 if a lab can be built here, else print why and exit 1
#   parley-dns-lab.sh up LAB [--owner PID] [--reflector]
#                                                build hosts LAB-r, LAB-a, LAB-b (LAB: letters, digits, '-', at most
#                                                12) and wait until named answers (with --reflector: the router's
#                                                avahi-daemon runs) and both hosts' avahi-daemons run; with --owner,
#                                                the lab belongs to process PID (see sweep)
#   parley-dns-lab.sh exec LAB a|b|r CMD [ARG...]
#                                                run CMD inside a host (its network, mounts, host name and PIDs)
#   parley-dns-lab.sh addr LAB a|b               print the host's IPv4 address
#   parley-dns-lab.sh dns-server LAB a|b         print the router's address on that host's subnet (the DNS server)
#   parley-dns-lab.sh keyfile LAB                print the path of the TSIG key file, for `nsupdate -k FILE` (this
#                                                and named and dig: wide-area labs only)
#   parley-dns-lab.sh zone LAB                   print the zone name (parley.test)
#   parley-dns-lab.sh dig LAB [ARG...]           run dig @server ARG... inside the router
#   parley-dns-lab.sh named LAB start|stop|restart
#                                                stop named (its port is then closed: ICMP port unreachable; the
#                                                ended named stays a zombie until down) or start it again (the zone
#                                                keeps its updates: they are in the journal)
#   parley-dns-lab.sh link LAB a|b down|up       take the host's interface down or up (its routes go with it; up
#                                                restores the default route)
#   parley-dns-lab.sh readdress LAB a|b          move the host to another IPv4 address of its subnet, keep the
#                                                default route, print the new address
#   parley-dns-lab.sh down LAB                   kill the three hosts and delete the namespaces (idempotent)
#   parley-dns-lab.sh list                       labs still present
#   parley-dns-lab.sh sweep                      take down every lab whose owner process has ended
#
# The lab's state is kept in $PARLEY_DNS_LAB_STATE/LAB (default /tmp/parley-dns-lab/LAB): the first process of each
# host (as a PID of this machine) and, in a --reflector lab, an empty file named reflector. Wide-area also: the key
# file parley-update.key, named's configuration named.conf, its working directory named/ (zone file parley.test.zone
# and the journal of dynamic updates, parley.test.zone.jnl), its log named.log (every query and update included) and
# named.stderr; named's pid and session key files are in the router's private /run/named. Each avahi-daemon's
# configuration and output are in its host's /run (parley-avahi.conf, parley-avahi.log). Nothing outside the
# namespaces is changed except that directory.
#
# Wide-area browsing in avahi 0.8 (what a test using this lab will see): a browser sends one query, no more (no
# polling, no re-query when records expire), and never reports a removal; records are cached for their TTL and a new
# browser started while any answer for its name is cached is served from the cache without a query. Interface and
# protocol of wide-area results are -1 (AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC); an empty answer is a Failure
# ("Not found", or "DNS failure: NXDOMAIN"), an unreachable server a Failure "Timeout reached" after 2.5 s.
# `avahi-daemon --reload` (SIGHUP) empties avahi's wide-area cache.
set -eu

STATE_ROOT=${PARLEY_DNS_LAB_STATE:-/tmp/parley-dns-lab}
ZONE=parley.test
KEY_NAME=parley-update

die() { echo "parley-dns-lab: $*" >&2; exit 1; }

. "$(dirname "$0")/lab-host.sh"

lab_dir() { echo "$STATE_ROOT/$1"; }

subnet_octet() { # LAB -> X of 10.X.1.0/24 and 10.X.2.0/24, derived from the name so that concurrent labs differ
    echo $(( $(printf '%s' "$1" | cksum | cut -d' ' -f1) % 150 + 100 ))
}

net_of() { # HOST -> 1 for a, 2 for b
    [ "$1" = a ] && echo 1 || echo 2
}

router_addr() { # LAB HOST -> the router's address on HOST's subnet
    echo "10.$(subnet_octet "$1").$(net_of "$2").1"
}

avahi_config() { # MODE (wide-area|reflector) -> a host's avahi-daemon.conf, written inside the host's private /run
    if [ "$1" = reflector ]; then wide=no; domains=; else wide=yes; domains="browse-domains=$ZONE"; fi
    cat <<EOF
[server]
use-ipv4=yes
use-ipv6=yes
enable-dbus=yes
disallow-other-stacks=no
$domains
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=$wide
[publish]
publish-hinfo=no
publish-workstation=no
publish-aaaa-on-ipv4=yes
publish-a-on-ipv6=no
publish-resolv-conf-dns-servers=no
[reflector]
enable-reflector=no
[rlimits]
EOF
}

reflector_config() { # LAB -> the router's avahi-daemon.conf in a --reflector lab. docs/discovery.md quotes these
    # lines as its reflector recipe: keep the two in step. enable-dbus=no only because the lab's router runs no
    # D-Bus system bus (a reflector needs none); everything else is avahi's default.
    cat <<EOF
[server]
use-ipv4=yes
use-ipv6=yes
allow-interfaces=${1}ra,${1}rb
enable-dbus=no
[reflector]
enable-reflector=yes
EOF
}

is_reflector() { # LAB: whether it was built with --reflector
    [ -e "$(lab_dir "$1")/reflector" ]
}

need_wide_area() { # LAB
    is_reflector "$1" && die "lab $1 is a --reflector lab: it has no DNS server"
    return 0
}

named_config() { # LAB -> named.conf
    dir=$(lab_dir "$1")
    ra=$(router_addr "$1" a); rb=$(router_addr "$1" b)
    cat <<EOF
include "$dir/$KEY_NAME.key";
options {
    directory "$dir/named";
    pid-file "/run/named/named.pid";
    session-keyfile "/run/named/session.key";
    managed-keys-directory "$dir/named";
    listen-on port 53 { $ra; $rb; 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    allow-query { any; };
    dnssec-validation no;
    notify no;
    querylog yes;
};
controls { };
logging {
    channel lab { file "$dir/named.log"; severity info; print-time yes; print-severity yes; print-category yes; };
    category default { lab; };
    category update { lab; };
    category update-security { lab; };
    category security { lab; };
    category queries { lab; };
};
zone "$ZONE" {
    type primary;
    file "$ZONE.zone";
    allow-update { key $KEY_NAME; };
};
EOF
}

zone_file() { # LAB
    cat <<EOF
\$ORIGIN $ZONE.
\$TTL 60
@   IN SOA ns.$ZONE. hostmaster.$ZONE. ( 1 60 30 600 10 )
@   IN NS  ns.$ZONE.
ns  IN A   $(router_addr "$1" a)
; RFC 6763 section 11: this domain is a browse domain (for domain browsers asking the zone itself).
b._dns-sd._udp   IN PTR @
db._dns-sd._udp  IN PTR @
lb._dns-sd._udp  IN PTR @
EOF
}

start_host() { # LAB HOST NAME RESOLV-NAMESERVER DBUS(0|1)
    lab=$1; h=$2; name=$3; nameserver=$4; dbus=$5
    ns="$lab-$h"
    # The first process of the host: private /run, /etc/resolv.conf replaced inside this mount namespace only,
    # own host name, optionally its own D-Bus system bus, then sleep until killed.
    ip netns exec "$ns" unshare --mount --uts --pid --fork --propagation private --mount-proc \
        sh -c '
            mount -t tmpfs -o mode=0755 parley-run /run &&
            mkdir -p /run/dbus /run/avahi-daemon /run/named &&
            echo "nameserver $1" > /run/parley-resolv.conf &&
            mount --bind /run/parley-resolv.conf /etc/resolv.conf &&
            hostname "$0" &&
            { [ "$2" = 0 ] || dbus-daemon --system --fork; } &&
            exec sleep infinity
        ' "$name" "$nameserver" "$dbus" </dev/null >/dev/null 2>&1 &
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
    # Wait for the sleep that proves the setup finished (and the system bus socket, where there is one).
    i=0
    until in_host "$lab" "$h" sh -c '{ [ "$1" = 0 ] || test -S /run/dbus/system_bus_socket; } &&
                                      pgrep -x sleep >/dev/null' sh "$dbus" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || die "host $h did not finish its setup"
        sleep 0.05
    done
}

avahi_start() { # LAB HOST
    if [ "$2" = r ]; then
        reflector_config "$1"
    elif is_reflector "$1"; then
        avahi_config reflector
    else
        avahi_config wide-area
    fi | in_host "$1" "$2" sh -c 'cat > /run/parley-avahi.conf'
    avahi_launch "$1" "$2"
}

named_start() { # LAB
    lab=$1; dir=$(lab_dir "$lab")
    # named puts itself in the background (inside the router's PID namespace, so it ends with the router); what it
    # says before its log file is open goes to named.stderr. IPv4 only (-4).
    in_host "$lab" r sh -c 'exec named -4 -c "$1" </dev/null >>"$2" 2>&1' sh "$dir/named.conf" "$dir/named.stderr" \
        || die "named did not start: $(cat "$dir/named.stderr" 2>/dev/null)"
    server=$(router_addr "$lab" a)
    i=0
    until in_host "$lab" r dig +time=1 +tries=1 +short "@$server" SOA "$ZONE" 2>/dev/null | grep -q "^ns\.$ZONE\. "; do
        i=$((i + 1))
        [ $i -lt 50 ] || die "named does not answer after 10 s (see $dir/named.log and $dir/named.stderr)"
        sleep 0.2
    done
}

named_stop() { # LAB
    in_host "$1" r sh -c '
        pid=$(cat /run/named/named.pid 2>/dev/null) || exit 0
        kill -TERM "$pid" 2>/dev/null || exit 0
        i=0
        # PID 1 of the router (sleep) reaps no child: a named that has ended stays a zombie (state Z).
        while [ -e "/proc/$pid" ] && ! grep -q "^[0-9]* ([^)]*) Z" "/proc/$pid/stat" 2>/dev/null; do
            i=$((i + 1)); [ $i -lt 100 ] || { kill -KILL "$pid"; exit 0; }
            sleep 0.1
        done' || die "cannot stop named"
}

wait_dns() { # LAB HOST: until the host gets answers from named on both of the router's addresses (its own subnet,
    # then the other one, through its default route)
    lab=$1; h=$2
    for server in "$(router_addr "$lab" a)" "$(router_addr "$lab" b)"; do
        i=0
        until in_host "$lab" "$h" dig +time=1 +tries=1 +short "@$server" SOA "$ZONE" 2>/dev/null |
              grep -q "^ns\.$ZONE\. "; do
            i=$((i + 1)); [ $i -lt 20 ] || die "host $h gets no answer from named at $server"
            sleep 0.1
        done
    done
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
check)
    [ "$(id -u)" -eq 0 ] || { echo "needs root (to create network namespaces)"; exit 1; }
    for tool in ip unshare nsenter dbus-daemon avahi-daemon pgrep named tsig-keygen dig nsupdate; do
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
    owner=; reflector=0
    while [ $# -gt 0 ]; do
        case "$1" in
        --owner) [ $# -ge 2 ] || die "--owner needs a PID"; owner=$2; shift;;
        --reflector) reflector=1;;
        *) die "unknown option $1";;
        esac
        shift
    done
    dir=$(lab_dir "$lab")
    [ -e "$dir/r.pid" ] && die "lab $lab is already up (or was not taken down)"
    mkdir -p "$dir/named"
    # The owner as PID and start time, so that a PID reused by another process does not keep the lab alive.
    [ -n "$owner" ] && echo "$owner $(start_time "$owner")" > "$dir/owner"
    [ $reflector -eq 1 ] && : > "$dir/reflector"
    x=$(subnet_octet "$lab")
    for h in r a b; do ip netns add "$lab-$h"; done
    ip netns exec "$lab-r" sysctl -qw net.ipv4.ip_forward=1
    for h in a b; do
        n=$(net_of "$h")
        ip link add "${lab}r$h" type veth peer name "${lab}$h"
        ip link set "${lab}r$h" netns "$lab-r"
        ip link set "${lab}$h" netns "$lab-$h"
        ip -n "$lab-r" addr add "10.$x.$n.1/24" dev "${lab}r$h"
        ip -n "$lab-$h" addr add "10.$x.$n.2/24" dev "${lab}$h"
        # Deleting a primary address would take the others of its subnet with it (see readdress).
        ip netns exec "$lab-$h" sysctl -qw "net.ipv4.conf.${lab}$h.promote_secondaries=1"
        ip -n "$lab-r" link set "${lab}r$h" multicast on up
        ip -n "$lab-$h" link set "${lab}$h" multicast on up
        ip -n "$lab-$h" route add default via "10.$x.$n.1"
    done
    for h in r a b; do ip -n "$lab-$h" link set lo up; done
    if [ $reflector -eq 0 ]; then
        tsig-keygen -a hmac-sha256 "$KEY_NAME" > "$dir/$KEY_NAME.key"
        chmod 0600 "$dir/$KEY_NAME.key"   # parleyd refuses a TSIG key file that others may read; named runs as root
        named_config "$lab" > "$dir/named.conf"
        zone_file "$lab" > "$dir/named/$ZONE.zone"
    fi
    start_host "$lab" r router 127.0.0.1 0
    start_host "$lab" a hosta "$(router_addr "$lab" a)" 1
    start_host "$lab" b hostb "$(router_addr "$lab" b)" 1
    if [ $reflector -eq 1 ]; then
        avahi_start "$lab" r
    else
        named_start "$lab"
        wait_dns "$lab" a
        wait_dns "$lab" b
    fi
    avahi_start "$lab" a
    avahi_start "$lab" b
    ;;
exec)
    need_lab "${1:-}"; lab=$1; h=${2:-}; need_host "$h" a b r; shift 2
    in_host "$lab" "$h" "$@"
    ;;
addr)
    need_lab "${1:-}"; lab=$1; h=${2:-}; need_host "$h" a b
    a=$(host_addr "$lab" "$h"); [ -n "$a" ] || die "host $h of lab $lab has no IPv4 address"
    echo "$a"
    ;;
dns-server)
    need_lab "${1:-}"; lab=$1; h=${2:-}; need_host "$h" a b
    router_addr "$lab" "$h"
    ;;
keyfile)
    need_lab "${1:-}"; lab=$1; need_wide_area "$lab"
    f="$(lab_dir "$lab")/$KEY_NAME.key"; [ -s "$f" ] || die "lab $lab is not up"
    echo "$f"
    ;;
zone)
    echo "$ZONE"
    ;;
named)
    need_lab "${1:-}"; lab=$1; need_wide_area "$lab"
    case "${2:-}" in
    stop) named_stop "$lab";;
    start) named_start "$lab";;
    restart) named_stop "$lab"; named_start "$lab";;
    *) die "named action must be start, stop or restart";;
    esac
    ;;
dig)
    need_lab "${1:-}"; lab=$1; need_wide_area "$lab"; shift
    in_host "$lab" r dig "@$(router_addr "$lab" a)" "$@"
    ;;
link)
    need_lab "${1:-}"; lab=$1; h=${2:-}; need_host "$h" a b; state=${3:-}
    set_link "$lab-$h" "${lab}$h" "$state"
    if [ "$state" = up ]; then
        # The default route went away with the link; put it back once the link has its carrier again.
        i=0
        until ip -n "$lab-$h" route replace default via "$(router_addr "$lab" "$h")" 2>/dev/null; do
            i=$((i + 1)); [ $i -lt 50 ] || die "cannot restore the default route of host $h"
            sleep 0.1
        done
    fi
    ;;
readdress)
    need_lab "${1:-}"; lab=$1; h=${2:-}; need_host "$h" a b
    old=$(host_addr "$lab" "$h"); [ -n "$old" ] || die "host $h of lab $lab has no IPv4 address"
    new=$(readdress_iface "$lab-$h" "${lab}$h" "$old" 24)
    ip -n "$lab-$h" route replace default via "$(router_addr "$lab" "$h")"
    echo "$new"
    ;;
down)
    need_lab "${1:-}"; lab=$1
    for h in r a b; do kill_host "$lab" "$h"; done
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
