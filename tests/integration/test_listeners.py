"""Every listener binds only where configured (issue 51: the KV-event PUB and replay sockets
bound tcp://* whatever server.host said, and an outside subscriber decoded another user's prompt
from BlockStored token ids). With server.host 127.0.0.1 and KV events on, nothing of the daemon
listens on 0.0.0.0 or ::, and the events port is on loopback (tests/routers/test_kv_events_zmq.py
reads the events there with a real subscriber)."""
import socket

import pytest

from conftest import Daemon, free_port, serve_available
from listeners import is_every_interface, is_loopback, listening_sockets


@pytest.fixture(scope="module")
def events_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    kv_port, replay_port = free_port(), free_port()
    # The defaults but the ports (a fixed one may be taken on a shared machine).
    d = Daemon(["--kv-events.enabled=true", f"--kv-events.port={kv_port}",
                f"--kv-events.replay-endpoint=tcp://127.0.0.1:{replay_port}"]).wait_ready()
    d.kv_port, d.replay_port = kv_port, replay_port
    yield d
    d.stop()


def test_nothing_listens_on_every_interface(events_daemon):
    d = events_daemon
    socks = listening_sockets(d.proc.pid)
    ports = {p for _, p in socks}
    for port in (d.http_port, d.grpc_port, d.kv_port, d.replay_port):
        assert port in ports, (port, socks)
    wide = [s for s in socks if is_every_interface(s[0])]
    assert not wide, f"listening on every interface: {wide} (all: {socks})"
    assert all(is_loopback(addr) for addr, _ in socks), socks


def test_events_follow_server_host_by_default(events_daemon):
    assert (("127.0.0.1", events_daemon.kv_port) in listening_sockets(events_daemon.proc.pid))
    assert "binds every interface" not in events_daemon.logs()


def other_interface_address():
    """A non-loopback IPv4 address of this host (what an outside subscriber would dial)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for a UDP connect
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def test_the_events_ports_refuse_another_interface(events_daemon):
    # The probe's trigger: a subscriber dialling the host's own network address.
    addr = other_interface_address()
    if addr is None:
        pytest.skip("this host has no non-loopback IPv4 address")
    for port in (events_daemon.kv_port, events_daemon.replay_port):
        with pytest.raises(OSError):
            socket.create_connection((addr, port), timeout=2).close()


def test_an_explicit_wildcard_endpoint_is_bound_and_warned_about():
    why = serve_available()
    if why:
        pytest.skip(why)
    port = free_port()
    d = Daemon(["--kv-events.enabled=true", f"--kv-events.endpoint=tcp://*:{port}"]).wait_ready()
    try:
        assert ("0.0.0.0", port) in listening_sockets(d.proc.pid)
        assert f"kv_events.endpoint tcp://*:{port} binds every interface" in d.logs()
    finally:
        d.stop()


def test_endpoint_and_host_together_stop_start_up():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(["--kv-events.enabled=true", "--kv-events.endpoint=tcp://127.0.0.1:1",
                "--kv-events.host=127.0.0.1"])
    assert d.proc.wait(timeout=60) != 0
    assert "kv_events.endpoint" in d.logs() and "not both" in d.logs()
