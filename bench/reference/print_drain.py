"""Reference for the python-tool bench's memory row: jupyter_client runs one cell that prints BYTES
bytes (lines of 1 KiB, written 64 KiB at a time, the same code the bench gives nbagent) and drains
IOPub until the kernel is idle. With `keep`, the stream text is kept as nbclient keeps a cell's
outputs (appended to a list); with `count`, it is only counted (a client that shows nothing). Prints
one JSON line: the client process's peak RSS, the bytes received, the seconds the cell took.

usage: print_drain.py BYTES keep|count
"""
import json
import resource
import sys
import time

from jupyter_client.manager import start_new_kernel


def main() -> None:
    total, mode = int(sys.argv[1]), sys.argv[2]
    blocks = total // (1024 * 64)
    code = (
        "import sys\n"
        "line = 'x' * 1023 + '\\n'\n"
        "block = line * 64\n"
        f"for _ in range({blocks}):\n"
        "    sys.stdout.write(block)\n"
        "sys.stdout.flush()\n"
    )
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kept: list[str] = []
        received = 0
        start = time.perf_counter()
        msg_id = kc.execute(code)
        while True:
            msg = kc.get_iopub_msg(timeout=600)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                received += len(content["text"])
                if mode == "keep":
                    kept.append(content["text"])
            elif kind == "status" and content["execution_state"] == "idle":
                break
        seconds = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                    "received_bytes": received,
                    "seconds": seconds,
                    "kept_chunks": len(kept),
                }
            )
        )
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
