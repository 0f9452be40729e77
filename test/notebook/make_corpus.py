"""Writes a varied corpus of notebooks with nbformat.write into the directory given as argv[1].

Prints a JSON list of the file names. Used by the round-trip tests (run with /usr/bin/python3).
"""
import base64
import io
import json
import math
import os
import random
import struct
import sys
import zlib

import nbformat
from nbformat import v4

OUT = sys.argv[1]
names = []


def png(width, height):
    raw = b"".join(b"\x00" + bytes([(x * 7 + y) % 256 for x in range(width)] * 3)[: width * 3] for y in range(height))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode("ascii")


def jpeg(width, height):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, format="JPEG", exif=b"Exif\x00\x00" + b"\x00" * 3000)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def save(name, nb):
    nbformat.write(nb, os.path.join(OUT, name))
    names.append(name)


def rich():
    nb = v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.2", "codemirror_mode": {"name": "ipython", "version": 3}},
        "floats": [1.0, 1e-05, -0.0, 1.5e300, 0.1, 2.5e-300, 123456789.125, 1e16, 1e15, 3.0e-5],
        "ints": [0, -1, 12345678901234567890, -(2**70), 2**53, 2**53 + 1, 9007199254740993],
        "specials": [math.nan, math.inf, -math.inf],
        "keys": {"10": 1, "9": 2, "a": 3, "B": 4, "\uffff": 5, "\U0001f600": 6, "é": 7, "": 8},
        "strings": ["quote \" backslash \\ tab \t nul \x00 esc \x1b del \x7f", "line\u2028sep", "\r\n"],
    }
    nb.cells = [
        v4.new_markdown_cell("# Título ünïcödé 日本語 🚀\n\nמימין לשמאל, e\u0301, 😀\n- item"),
        v4.new_code_cell(
            "import numpy as np\nprint('héllo')\n",
            execution_count=1,
            outputs=[
                v4.new_output("stream", name="stdout", text="héllo\nworld\n"),
                v4.new_output("stream", name="stderr", text="warn: \x1b[31mred\x1b[0m\n"),
            ],
        ),
        v4.new_code_cell(
            "x = {'a': 1.0}\nx",
            execution_count=2,
            outputs=[
                v4.new_output(
                    "execute_result",
                    execution_count=2,
                    data={
                        "text/plain": "{'a': 1.0}",
                        "text/html": "<b>a</b>\n<i>1.0</i>\n",
                        "application/json": {"a": 1.0, "b": [1e-05, 2], "big": 12345678901234567890},
                        "application/vnd.custom+json": {"lines": "not\nsplit"},
                    },
                    metadata={"application/json": {"expanded": False}},
                )
            ],
        ),
        v4.new_code_cell(
            "plot()",
            execution_count=3,
            outputs=[
                v4.new_output(
                    "display_data",
                    data={"image/png": png(64, 48), "text/plain": "<Figure size 640x480 with 1 Axes>"},
                    metadata={"image/png": {"width": 64, "height": 48}},
                ),
                v4.new_output("display_data", data={"image/jpeg": jpeg(40, 30), "text/plain": "<JPEG>"}),
                v4.new_output(
                    "display_data",
                    data={"image/svg+xml": "<svg>\n<rect/>\n</svg>\n", "application/javascript": "a();\nb();\n"},
                ),
            ],
        ),
        v4.new_code_cell(
            "1/0",
            execution_count=4,
            outputs=[
                v4.new_output(
                    "error",
                    ename="ZeroDivisionError",
                    evalue="division by zero",
                    traceback=["\x1b[0;31m---------\x1b[0m", "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                )
            ],
        ),
        v4.new_markdown_cell(
            "![img](attachment:a.png)",
            attachments={"a.png": {"image/png": png(3, 2)}, "notes.txt": {"text/plain": "one\ntwo\n"}},
        ),
        v4.new_raw_cell("raw\r\nwindows\rmac\n", metadata={"format": "text/x-rst"}),
        v4.new_code_cell("", metadata={"tags": ["empty"], "scrolled": True}),
    ]
    save("rich-4.5.ipynb", nb)


def version40():
    nb = v4.new_notebook()
    nb.nbformat_minor = 0
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    for i in range(4):
        c = v4.new_code_cell(f"a = {i}.0\nprint(a)", execution_count=i + 1,
                             outputs=[v4.new_output("stream", name="stdout", text=f"{i}.0\n")])
        del c["id"]
        nb.cells.append(c)
    md = v4.new_markdown_cell("old *notebook*")
    del md["id"]
    nb.cells.append(md)
    save("old-4.0.ipynb", nb)
    nb.nbformat_minor = 4
    save("old-4.4.ipynb", nb)


def widgets():
    nb = v4.new_notebook()
    state = {
        "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "model_name": "FloatSliderModel",
        "state": {"value": 0.5, "max": 10.0, "min": 0.0, "step": 0.1, "description": "x", "layout": "IPY_MODEL_abc"},
    }
    nb.metadata = {
        "widgets": {
            "application/vnd.jupyter.widget-state+json": {
                "state": {"0f1e2d3c": state},
                "version_major": 2,
                "version_minor": 0,
            }
        }
    }
    nb.cells = [
        v4.new_code_cell(
            "slider",
            execution_count=1,
            outputs=[
                v4.new_output(
                    "display_data",
                    data={
                        "application/vnd.jupyter.widget-view+json": {"model_id": "0f1e2d3c", "version_major": 2, "version_minor": 0},
                        "text/plain": "FloatSlider(value=0.5)",
                    },
                )
            ],
        )
    ]
    save("widgets.ipynb", nb)


def empty():
    save("empty.ipynb", v4.new_notebook())


def randomized(seed):
    rnd = random.Random(seed)
    alphabet = "ab c\n\t\"\\é日😀\u2028\r{}[],:0.1e-"

    def text():
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))

    def value(depth):
        kind = rnd.randint(0, 7 if depth < 3 else 4)
        if kind == 0:
            return rnd.choice([True, False, None])
        if kind == 1:
            return rnd.randint(-(10**25), 10**25)
        if kind == 2:
            return rnd.choice([rnd.random() * 10 ** rnd.randint(-20, 20), float(rnd.randint(-5, 5)), -0.0])
        if kind in (3, 4):
            return text()
        if kind in (5, 6):
            return {text(): value(depth + 1) for _ in range(rnd.randint(0, 4))}
        return [value(depth + 1) for _ in range(rnd.randint(0, 4))]

    nb = v4.new_notebook()
    nb.metadata = {"random": value(0), "kernelspec": {"name": "python3", "display_name": "P", "language": "python"}}
    for _ in range(rnd.randint(1, 12)):
        kind = rnd.random()
        if kind < 0.5:
            outputs = []
            for _ in range(rnd.randint(0, 3)):
                outputs.append(rnd.choice([
                    v4.new_output("stream", name=rnd.choice(["stdout", "stderr"]), text=text()),
                    v4.new_output("execute_result", execution_count=rnd.randint(1, 99), data={"text/plain": text()}),
                    v4.new_output("display_data", data={"text/markdown": text(), "application/json": value(1) if False else {"k": value(2)}}),
                ]))
            nb.cells.append(v4.new_code_cell(text(), execution_count=rnd.choice([None, rnd.randint(1, 99)]),
                                             outputs=outputs, metadata={"m": value(1)}))
        elif kind < 0.85:
            nb.cells.append(v4.new_markdown_cell(text()))
        else:
            nb.cells.append(v4.new_raw_cell(text()))
    save(f"random-{seed}.ipynb", nb)


rich()
version40()
widgets()
empty()
for s in range(int(sys.argv[2]) if len(sys.argv) > 2 else 20):
    randomized(s)
print(json.dumps(names))
