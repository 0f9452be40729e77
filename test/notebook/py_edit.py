"""Python's version of a notebook edit, for comparison (run with /usr/bin/python3).

argv[1]: a JSON file with a list of jobs {"src", "dst", "index", "source"}; each job reads `src`
with nbformat, replaces cell `index`'s source, and writes `dst` with nbformat.write.
"""
import json
import sys
import warnings

import nbformat

warnings.simplefilter("ignore")
with open(sys.argv[1], encoding="utf-8") as f:
    jobs = json.load(f)
for job in jobs:
    nb = nbformat.read(job["src"], as_version=nbformat.NO_CONVERT)
    nb.cells[job["index"]].source = job["source"]
    nbformat.write(nb, job["dst"])
