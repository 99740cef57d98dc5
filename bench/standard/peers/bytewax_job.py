#!/usr/bin/env python3
"""The standard benchmark's job in Bytewax: the six edits of `pure_python.py` in one `map` over
Bytewax's file source, written with its file sink.

    python bytewax_job.py CORPUS.jsonl OUT.jsonl [--processes 2]

How it runs on 2 cores: as a cluster of 2 processes of 1 worker each on this machine, which
Bytewax's documentation describes as one `python -m bytewax.run MODULE:FLOW -i N -a
"host:port;host:port"` per process; this script starts both (`process` below does what that
command does; `python -m bytewax.testing -p 2` would too, but it is the testing entrypoint).
Why processes and not `-w 2`: Bytewax's performance guide ("Workers, processes and GIL
contention") says workers added with `-w` are threads of one process that contend for the GIL,
so to use more cores one should start with more processes (`-i/-a`). A source with one partition
(one file is read by one worker) needs `redistribute` after the input for the other worker to
take part, at the cost of pickling items between the processes; the file sink is one partition
too, so every result goes back to the worker that owns it. The guide also says to measure
whether `redistribute` pays: at 20,000 records (all a check here could afford) 2 processes and 1
took about the same wall time, start-up dominating.
"""
import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

# The six edits, as the pure-Python reference makes them (bench/standard/pure_python.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pure_python  # noqa: E402


def edit(line):
    """The six edits of pure_python.py, on one JSON line."""
    # The file sink is a partitioned sink: it takes (key, line) pairs, one partition.
    return "", json.dumps(pure_python.edit(json.loads(line)), separators=(",", ":"))


def get_flow(src, dst):
    import bytewax.operators as op
    from bytewax.connectors.files import FileSink, FileSource
    from bytewax.dataflow import Dataflow

    flow = Dataflow("standard_six_edits")
    lines = op.input("corpus", flow, FileSource(Path(src)))
    lines = op.redistribute("spread", lines)
    out = op.map("six_edits", lines, edit)
    op.output("out", out, FileSink(Path(dst)))
    return flow


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def listening(port):
    """Whether some socket listens on TCP `port` (read from /proc, so nothing connects to it)."""
    want = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    cols = row.split()
                    if cols[1].endswith(want) and cols[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def process(index, addresses, src, dst):
    """One process of the cluster: what `python -m bytewax.run "bytewax_job:get_flow(SRC, DST)"
    -i INDEX -a ADDRESSES` does (the same `cli_main`, its default 10 s epoch), except that it
    first waits until the processes before it listen. Timely's process i connects to every
    process before it and retries a refused connection only after a second; started at once,
    process 1 usually tries before process 0 listens, and the run would pay that second."""
    from bytewax.run import cli_main

    flow = get_flow(src, dst)
    addresses = addresses.split(";")
    deadline = time.monotonic() + 60
    for address in addresses[:index]:
        port = int(address.rsplit(":", 1)[1])
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.005)
    cli_main(flow, workers_per_process=1, process_id=index, addresses=addresses,
             epoch_interval=timedelta(seconds=10))


def main(src, dst, processes=2):
    src, dst = os.path.abspath(src), os.path.abspath(dst)
    if os.path.exists(dst):
        os.remove(dst)
    if processes == 1:
        from bytewax.run import cli_main

        cli_main(get_flow(src, dst), epoch_interval=timedelta(seconds=10))
        return
    addresses = ";".join(f"127.0.0.1:{p}" for p in free_ports(processes))
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--process", str(i),
                               addresses, src, dst]) for i in range(processes)]
    codes, peak = [], 0
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        codes.append(os.waitstatus_to_exitcode(status))
        peak += usage.ru_maxrss * 1024
    if any(codes):
        raise SystemExit(f"bytewax processes exited {codes}")
    # For run.py: its wait4 sees only the largest process's peak.
    print(f"peak RSS of the processes, summed: {peak} bytes", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--process":
        process(int(args[1]), args[2], args[3], args[4])
    else:
        n = 2
        if "--processes" in args:
            i = args.index("--processes")
            n = int(args[i + 1])
            del args[i:i + 2]
        main(args[0], args[1], n)
