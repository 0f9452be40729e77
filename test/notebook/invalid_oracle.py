"""Oracle for test/notebook/invalid.unit.test.ts (run with /usr/bin/python3): argv paths; prints one JSON
object {path: {"valid": bool, "errors": [[cell index or null, message], ...]}}. valid is
nbformat.validate without its repairs (duplicate ids rejected, missing ids not invented); errors are
jsonschema's findings against nbformat's schema, explained per cell type as nbformat does."""
import json
import sys
import warnings

import nbformat
from nbformat.validator import better_validation_error, get_validator

warnings.simplefilter("ignore")


def check(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    entry = {"valid": True, "errors": []}
    try:
        nbformat.validate(json.loads(json.dumps(data)), repair_duplicate_cell_ids=False)
    except Exception as e:  # noqa: BLE001
        entry["valid"] = False
        entry["errors"].append([None, str(e).split("\n")[0][:200]])
    major, minor = nbformat.reader.get_version(data)
    validator = get_validator(major, minor, name="jsonschema")
    for error in validator.iter_errors(data):
        better = better_validation_error(error, major, minor)
        where = list(better.relative_path)
        cell = where[1] if len(where) > 1 and where[0] == "cells" else None
        entry["errors"].append([cell, better.message[:200]])
    return entry


print(json.dumps({p: check(p) for p in sys.argv[1:]}))
