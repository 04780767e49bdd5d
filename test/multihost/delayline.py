#!/usr/bin/env python3
"""A user-space delay line between the multi-host bed's namespaces, for kernels without sch_netem.

    delayline.py --delay-ms 200 --loss-percent 5 <netns>=<ipv4> ...

For each namespace given, it opens a TUN device `wan0` there (IFF_TUN | IFF_NO_PI, not persistent: the devices,
and with them every route through them, vanish when this process dies), brings it up and turns rp_filter off in
that namespace, then prints "ready". The test (test/multihost/netns.ts) then routes a host's traffic to its peers through
`wan0` with /32 routes: their packets keep their addresses and arrive here. Each IPv4 packet read from any TUN
is dropped with probability `loss`, or written `delay` later to the TUN of the namespace that owns its
destination address. Per direction that is `tc netem delay D loss P` on the sender's egress. The delay is
constant, so one FIFO keeps the order. Packets to an address no namespace owns, and non-IPv4 packets, are
dropped. On SIGTERM it prints what it forwarded and dropped, and the most any packet was written after its due
time (its own error on top of the delay), then exits.

Standard library only (python3 is the one requirement); setns(2) through ctypes, as Python 3.11 lacks os.setns.
"""
import argparse
import collections
import ctypes
import fcntl
import os
import random
import select
import signal
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
DEVICE = "wan0"
# Large enough for any packet a TUN without offloads hands over (MTU 1500 by default).
READ_SIZE = 65535

_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def ifreq(flags=0):
    """struct ifreq: the name, then a short (flags); padded to the kernel's 40 bytes."""
    return struct.pack("16sH22x", DEVICE.encode(), flags)


def open_tun_in(netns):
    """A non-blocking fd of a new TUN `wan0` inside `netns`, up, with rp_filter off; this process stays where it is."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
    try:
        setns(target)
        # The device is made in the namespace current at open(2) of /dev/net/tun, hence after setns.
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        fcntl.ioctl(fd, TUNSETIFF, ifreq(IFF_TUN | IFF_NO_PI))
        # Routes and arrivals now differ per peer (a peer's packets may come on eth0 while the route back to it
        # is wan0, or the reverse): no reverse-path check on any interface of the namespace.
        for conf in os.listdir("/proc/sys/net/ipv4/conf"):
            with open(f"/proc/sys/net/ipv4/conf/{conf}/rp_filter", "w") as f:
                f.write("0")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            (flags,) = struct.unpack_from("16xH", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq()))
            fcntl.ioctl(s, SIOCSIFFLAGS, ifreq(flags | IFF_UP))
        return fd
    finally:
        setns(own)
        os.close(own)
        os.close(target)


def destination(packet):
    """The IPv4 destination address (4 bytes), or None for anything else."""
    if len(packet) < 20 or packet[0] >> 4 != 4:
        return None
    return packet[16:20]


def run(tuns, delay_s, loss, rng, stats):
    """Forever: read every TUN, queue what survives the loss, write what is due."""
    by_addr = {addr: fd for addr, fd in tuns}
    poller = select.epoll()
    for _, fd in tuns:
        poller.register(fd, select.EPOLLIN)
    due = collections.deque()  # (monotonic time to write, fd, packet); constant delay keeps it sorted
    while True:
        timeout = max(0.0, due[0][0] - time.monotonic()) if due else -1
        for fd, _ in poller.poll(timeout):
            while True:
                try:
                    packet = os.read(fd, READ_SIZE)
                except BlockingIOError:
                    break
                out = by_addr.get(destination(packet))
                if out is None:
                    stats["unroutable"] += 1
                elif rng.random() < loss:
                    stats["dropped"] += 1
                else:
                    due.append((time.monotonic() + delay_s, out, packet))
        now = time.monotonic()
        while due and due[0][0] <= now:
            due_at, out, packet = due.popleft()
            # How far behind its due time this write is: the delay line's own error on top of the delay.
            stats["late_ms_max"] = max(stats["late_ms_max"], round((now - due_at) * 1000))
            try:
                os.write(out, packet)
                stats["forwarded"] += 1
            except OSError:
                stats["unroutable"] += 1  # the receiving device is down: lost, as on a cut cable


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--loss-percent", type=float, required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("hosts", nargs="+", metavar="NETNS=IPV4")
    args = parser.parse_args()
    stats = {"forwarded": 0, "dropped": 0, "unroutable": 0, "late_ms_max": 0}

    def report_and_exit(_signum, _frame):
        print(" ".join(f"{k} {v}" for k, v in stats.items()), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, report_and_exit)
    signal.signal(signal.SIGINT, report_and_exit)
    tuns = []
    for entry in args.hosts:
        netns, _, addr = entry.partition("=")
        tuns.append((socket.inet_aton(addr), open_tun_in(netns)))
    print("ready", flush=True)
    run(tuns, args.delay_ms / 1000, args.loss_percent / 100, random.Random(args.seed), stats)


if __name__ == "__main__":
    main()
