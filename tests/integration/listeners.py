"""The TCP sockets a process listens on, read from /proc (no ss/netstat needed): the inodes of
/proc/<pid>/fd's sockets matched against /proc/net/tcp and tcp6 rows in state LISTEN."""
import ipaddress
import os
import socket
import struct


def _inodes(pid):
    out = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[len("socket:["):-1])
    return out


def _address(hex_addr):
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(hex_addr, 16)))
    # tcp6: four 32-bit words, each in host (little-endian) order
    words = struct.unpack(">4I", raw)
    return socket.inet_ntop(socket.AF_INET6, struct.pack("<4I", *words))


def listening_sockets(pid):
    """[(address, port)] of the TCP sockets `pid` listens on."""
    inodes = _inodes(pid)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            addr, port = local.split(":")
            found.append((_address(addr), int(port, 16)))
    return found


def is_every_interface(address):
    return ipaddress.ip_address(address).is_unspecified


def is_loopback(address):
    """127.0.0.0/8, ::1, or ::ffff:127.x (gRPC binds 127.0.0.1 on an IPv6 socket, v4-mapped)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)
