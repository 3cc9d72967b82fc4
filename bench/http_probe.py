#!/usr/bin/env python3
"""Replays issue 23's outside probe against a running daemon and prints one line per scenario:
what came back, how long it took, and the daemon's RSS growth (with --pid).

  build/llmserve serve --server.http-threads 8 --http-port 8000 &
  python3 bench/http_probe.py --url http://127.0.0.1:8000 --pid $!
"""
import argparse
import json
import socket
import threading
import time
import urllib.request


def rss_kib(pid):
    if not pid:
        return 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(host, port):
    return socket.create_connection((host, port), timeout=60)


def read_all(sock, timeout):
    sock.settimeout(timeout)
    out = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def status_of(resp):
    return resp.split(b" ", 2)[1].decode() if resp.startswith(b"HTTP/1.") else "no answer"


def metric(url, name, label=None):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (label is None or label in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def raw(host, port, data, timeout=40):
    s = connect(host, port)
    t0 = time.monotonic()
    try:
        s.sendall(data)
    except OSError:
        pass
    resp = read_all(s, timeout)
    s.close()
    return status_of(resp), time.monotonic() - t0


def unary_disconnect(url, host, port):
    body = json.dumps({"prompt": "Count forever:", "max_tokens": 3000, "ignore_eos": True})
    before = metric(url, "llmserve_generation_tokens_total")
    s = connect(host, port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
              % (len(body), body.encode()))
    time.sleep(2)
    s.close()
    closed = time.monotonic()
    last, last_change = metric(url, "llmserve_generation_tokens_total"), time.monotonic()
    while time.monotonic() - last_change < 2 and time.monotonic() - closed < 40:
        time.sleep(0.1)
        now = metric(url, "llmserve_generation_tokens_total")
        if now != last:
            last, last_change = now, time.monotonic()
    return (f"{int(last - before)} tokens, generation ran {max(last_change - closed, 0):.2f} s "
            "after the close")


def slowloris(url, host, port, n=10):
    slow = []
    for _ in range(n):
        s = connect(host, port)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        slow.append(s)
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.send(b"X")
                except OSError:
                    pass
            stop.wait(2)
    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    time.sleep(0.5)
    lat = []
    for _ in range(5):
        t0 = time.monotonic()
        try:
            urllib.request.urlopen(url + "/health", timeout=5).read()
            lat.append(time.monotonic() - t0)
        except OSError:
            lat.append(None)
        time.sleep(0.5)
    stop.set()
    for s in slow:
        s.close()
    ok = [x for x in lat if x is not None]
    return (f"/health answered {len(ok)}/5 probes"
            + (f", median {sorted(ok)[len(ok) // 2] * 1000:.1f} ms" if ok else ""))


def many_headers(host, port, count=2_000_000):
    s = connect(host, port)
    t0 = time.monotonic()
    sent = 0
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        for block in range(count // 10000):
            s.sendall(b"".join(b"X-H%d: v\r\n" % (block * 10000 + i) for i in range(10000)))
            sent += 10000
        s.sendall(b"\r\n")
    except OSError:
        pass
    resp = read_all(s, 40)
    s.close()
    return f"{status_of(resp)} after {sent} headers sent, {time.monotonic() - t0:.2f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--pid", type=int, default=0)
    args = ap.parse_args()
    host, port = args.url.split("//", 1)[1].rsplit(":", 1)
    port = int(port)
    post = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
    scenarios = [
        ("1 unary request, socket closed after 2 s", lambda: unary_disconnect(args.url, host, port)),
        ("2 slowloris: 10 heads trickling, /health probes", lambda: slowloris(args.url, host, port)),
        ("3 prompt 'a' x 8,388,508",
         lambda: "%s in %.2f s" % raw(host, port, post + b"Content-Length: 8388530\r\n\r\n"
                                      + b'{"prompt":"' + b"a" * 8388508 + b'","max_tokens":1}')),
        ("4 2,000,000 headers", lambda: many_headers(host, port)),
        ("5 POST .../cancel without Content-Length",
         lambda: "%s in %.2f s" % raw(host, port, b"POST /v1/requests/x/cancel HTTP/1.1\r\n"
                                      b"Host: x\r\nConnection: close\r\n\r\n")),
        ("8 Content-Length: 9000000",
         lambda: "%s in %.2f s" % raw(host, port, post + b"Content-Length: 9000000\r\n\r\n")),
        ("8 Content-Length: 99999999999",
         lambda: "%s in %.2f s" % raw(host, port, post + b"Content-Length: 99999999999\r\n\r\n")),
        ("8 Content-Length: -1",
         lambda: "%s in %.2f s" % raw(host, port, post + b"Content-Length: -1\r\n\r\n")),
        ("9 Content-Length: 38 then 5",
         lambda: "%s in %.2f s" % raw(host, port, post + b"Content-Length: 38\r\nContent-Length: 5"
                                      b"\r\nConnection: close\r\n\r\n" + b'{"prompt":"hi","max_tokens":1}')),
    ]
    for name, run in scenarios:
        r0 = rss_kib(args.pid)
        result = run()
        grew = (rss_kib(args.pid) - r0) / 1024
        print(f"| {name} | {result} |" + (f" {grew:+.0f} MiB |" if args.pid else ""), flush=True)


if __name__ == "__main__":
    main()
