"""Reference for the python-tool bench's multi-cell row: jupyter_client's BlockingKernelClient on a
kernel it started runs N trivial cells (`1+1`) one after another, each to its reply and the
kernel's idle (execute_interactive), as a client that runs cells in order one request at a time
does. Driven by lines on stdin so its rounds alternate with nbagent's: `run N` answers one JSON line
{"ms": milliseconds for the N cells}; end of input stops the kernel.

usage: execute_cells.py   (then `run 100` lines on stdin)
"""
import json
import sys
import time

from jupyter_client.manager import start_new_kernel


def main() -> None:
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(20):
            kc.execute_interactive("1+1", output_hook=lambda m: None, timeout=60)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            n = int(line.split()[1])
            start = time.perf_counter()
            for _ in range(n):
                kc.execute_interactive("1+1", output_hook=lambda m: None, timeout=60)
            print(json.dumps({"ms": (time.perf_counter() - start) * 1000}), flush=True)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
