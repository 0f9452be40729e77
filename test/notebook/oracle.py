"""Oracle for notebook tests (run with /usr/bin/python3).

argv: paths. Prints one JSON object {path: {"valid": bool, "error": str|None, "canonical": bool}}.
With argv `--serve`: reads one path per stdin line and answers one JSON line per path.
Fields:
- valid: nbformat.validate passes on the file's JSON as stored, and cell ids are unique;
- canonical: nbformat.writes(nbformat.reads(text)) reproduces the file byte for byte.
"""
import json
import sys
import warnings

import nbformat

warnings.simplefilter("ignore")


def check(path):
    entry = {"valid": False, "error": None, "canonical": False}
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text)
        nbformat.validate(data, repair_duplicate_cell_ids=False)
        ids = [c.get("id") for c in data["cells"] if "id" in c]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate cell ids")
        entry["valid"] = True
        nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
        entry["canonical"] = nbformat.writes(nb) + "\n" == text
    except Exception as e:  # noqa: BLE001 - report any failure to the test
        entry["error"] = f"{type(e).__name__}: {e}"[:500]
    return entry


if sys.argv[1:2] == ["--serve"]:
    for line in sys.stdin:
        print(json.dumps(check(line.rstrip("\n"))), flush=True)
else:
    print(json.dumps({path: check(path) for path in sys.argv[1:]}))
