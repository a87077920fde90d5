# Sourced by parley-netns.sh and parley-dns-lab.sh: what both labs do with a "host" (a network namespace plus a
# process tree in its own mount, UTS and PID namespaces whose first process's PID is kept in $STATE_ROOT/LAB/HOST.pid).
# The sourcing script sets STATE_ROOT and defines die().

host_pid() { # LAB HOST -> PID of the host's first process, as seen from this machine
    f="$STATE_ROOT/$1/$2.pid"
    [ -s "$f" ] || die "host $2 of lab $1 is not running"
    cat "$f"
}

start_time() { # PID -> its start time in clock ticks since boot (field 22 of /proc/PID/stat), empty if gone
    sed -n 's/^.*) [^ ]* \([^ ]* \)\{18\}\([0-9]*\).*/\2/p' "/proc/$1/stat" 2>/dev/null || true
}

in_host() { # LAB HOST CMD...
    lab=$1; h=$2; shift 2
    pid=$(host_pid "$lab" "$h")
    exec_env="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # A D-Bus address from outside would point the command at another host's bus: each host uses its own.
    nsenter --target "$pid" --net --mount --uts --pid --wd=/ -- env -u DBUS_SYSTEM_BUS_ADDRESS "$exec_env" "$@"
}

avahi_launch() { # LAB HOST: start avahi-daemon with /run/parley-avahi.conf and wait until it runs
    # Its output goes to a file in the host's /run: a daemon holding our stdout open would stall whoever reads it.
    in_host "$1" "$2" sh -c \
        'exec avahi-daemon --daemonize --no-chroot --no-drop-root --no-rlimits -f /run/parley-avahi.conf \
            </dev/null >>/run/parley-avahi.log 2>&1' \
        || die "avahi-daemon did not start on host $2"
    i=0
    until in_host "$1" "$2" avahi-daemon --check 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 50 ] || die "avahi-daemon on host $2 is not running after 5 s"
        sleep 0.1
    done
}

kill_host() { # LAB HOST: kill the host's first process (PID 1 of its PID namespace: every process of the host
              # dies with it) and delete its network namespace
    f="$STATE_ROOT/$1/$2.pid"
    if [ -s "$f" ]; then
        pid=$(cat "$f")
        kill -KILL "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
    fi
    ip netns del "$1-$2" 2>/dev/null || true
}

sweep_labs() { # SCRIPT: take down (SCRIPT down LAB) every lab whose owner process has ended
    for dir in "$STATE_ROOT"/*/; do
        [ -f "$dir/owner" ] || continue
        read -r pid started < "$dir/owner" || continue
        [ -n "$pid" ] && [ "$(start_time "$pid")" = "${started:-}" ] && continue
        "$1" down "$(basename "$dir")"
    done
}

need_lab() { # LAB: die unless it is a usable lab name
    [ -n "${1:-}" ] || die "missing lab name"
    case "$1" in *[!A-Za-z0-9-]*) die "bad lab name '$1'";; esac
    # Interfaces are named LAB plus one or two letters (the DNS lab's router has LABra, LABrb): at most 14
    # characters, the kernel allows 15.
    [ "${#1}" -le 12 ] || die "lab name '$1' is longer than 12 characters"
}

need_host() { # HOST ALLOWED...: die unless HOST is one of them
    h=$1; shift
    for ok in "$@"; do [ "$h" = "$ok" ] && return 0; done
    die "host must be one of: $*"
}

host_addr() { # LAB HOST -> the host's IPv4 address on its interface
    ip -n "$1-$2" -4 addr show dev "$1$2" scope global 2>/dev/null | sed -n 's/.*inet \([0-9.]*\)\/.*/\1/p' | head -n 1
}

set_link() { # NS DEV down|up: take an interface down or bring it up
    case "$3" in
    down|up) ip -n "$1" link set "$2" "$3";;
    *) die "link state must be down or up";;
    esac
}

readdress_iface() { # NS DEV OLD PREFIXLEN -> the new address: OLD's last octet plus 10 (wrapping below 250), added
    # before OLD is deleted so that, with promote_secondaries, the interface never has no address
    last=${3##*.}; new="${3%.*}.$(( last >= 240 ? last - 230 : last + 10 ))"
    ip netns exec "$1" sysctl -qw "net.ipv4.conf.$2.promote_secondaries=1"
    ip -n "$1" addr add "$new/$4" dev "$2"
    ip -n "$1" addr del "$3/$4" dev "$2"
    echo "$new"
}
