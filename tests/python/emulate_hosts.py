"""Small real programs for emulation tests and benches, run inside the
hosts' network namespaces (`ip netns exec NS python emulate_hosts.py ...`):

- `serve ADDR PORT SECONDS`: accept TCP connections one after another and
  send each a repeating, recognisable pattern until it closes or time is up;
- `fetch ADDR PORT SECONDS OUT`: connect (retrying every second, as an
  application that waits for a network would) and read until the server
  stops or time is up; write the bytes received to OUT as JSON;
- `blast ADDR PORT SECONDS RATE SIZE`: send SIZE-byte UDP datagrams at RATE
  per second (an offered load).

Only the standard library: these stand for any real program."""

from __future__ import annotations

import json
import socket
import sys
import time

PATTERN = b"wayside-emulate real payload. " * 64  # 1920 bytes


def serve(addr: str, port: int, seconds: float) -> None:
    end = time.monotonic() + seconds
    with socket.create_server((addr, port)) as srv:
        srv.settimeout(0.5)
        while time.monotonic() < end:
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    while time.monotonic() < end:
                        try:
                            conn.sendall(PATTERN)
                        except TimeoutError:
                            continue
                except OSError:
                    pass  # the client went (reset, or out of range for good)


def fetch(addr: str, port: int, seconds: float, out: str) -> None:
    end = time.monotonic() + seconds
    received, connected_at = 0, None
    start = time.monotonic()
    while time.monotonic() < end and connected_at is None:
        try:
            s = socket.create_connection((addr, port), timeout=1.0)
            connected_at = time.monotonic() - start
        except OSError:
            time.sleep(0.2)
    if connected_at is not None:
        s.settimeout(0.5)
        with s:
            while time.monotonic() < end:
                try:
                    data = s.recv(1 << 16)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                received += len(data)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"bytes": received, "connected_at_s": connected_at}, f)


def blast(addr: str, port: int, seconds: float, rate: float, size: int) -> None:
    payload = PATTERN[:size].ljust(size, b".")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        start = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - start < seconds:
            due = int((now - start) * rate)
            while sent < due:
                try:
                    s.sendto(payload, (addr, port))
                except OSError:
                    pass  # no route yet, or a full queue: the load is offered regardless
                sent += 1
            time.sleep(min(0.001, 1 / rate))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(args[0], int(args[1]), float(args[2]))
    elif cmd == "fetch":
        fetch(args[0], int(args[1]), float(args[2]), args[3])
    elif cmd == "blast":
        blast(args[0], int(args[1]), float(args[2]), float(args[3]), int(args[4]))
    else:
        sys.exit(f"unknown command {cmd!r}: serve, fetch or blast")
