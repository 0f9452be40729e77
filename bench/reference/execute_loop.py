"""Reference for the network bench: jupyter_client's BlockingKernelClient, connected by a connection
file, runs `1+1` N times back to back (each until its reply and the kernel's idle) and prints the
median milliseconds of one execute.

usage: execute_loop.py CONNECTION_FILE N
"""
import statistics
import sys
import time

from jupyter_client import BlockingKernelClient


def main() -> None:
    connection_file, n = sys.argv[1], int(sys.argv[2])
    client = BlockingKernelClient(connection_file=connection_file)
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        for _ in range(5):
            client.execute_interactive("1+1", output_hook=lambda m: None, timeout=60)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            client.execute_interactive("1+1", output_hook=lambda m: None, timeout=60)
            times.append((time.perf_counter() - start) * 1000)
        print(statistics.median(times))
    finally:
        client.stop_channels()


if __name__ == "__main__":
    main()
