"""Reference for the warm named-session bench: a new Python process that attaches to a running kernel
with jupyter_client's BlockingKernelClient (by its connection file), executes one cell, prints the
result and exits -- what `nbagent call python ... --session NAME` does through a gateway.

usage: attach_execute.py CONNECTION_FILE CODE
"""
import sys

from jupyter_client import BlockingKernelClient


def main() -> None:
    connection_file, code = sys.argv[1], sys.argv[2]
    client = BlockingKernelClient(connection_file=connection_file)
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        shown = []

        def on_output(msg):
            kind = msg["header"]["msg_type"]
            if kind == "execute_result":
                shown.append(msg["content"]["data"].get("text/plain", ""))
            elif kind == "stream":
                shown.append(msg["content"]["text"])

        reply = client.execute_interactive(code, output_hook=on_output, timeout=30)
        print("".join(shown).strip())
        sys.exit(0 if reply["content"]["status"] == "ok" else 1)
    finally:
        client.stop_channels()


if __name__ == "__main__":
    main()
