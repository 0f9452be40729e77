/**
 * The Python the tests run their oracles (nbformat, nbclient), servers and kernels with: the one the
 * product would choose (src/kernel/interpreter.ts: NBAGENT_PYTHON, VIRTUAL_ENV, ./.venv, python3 on
 * PATH, /usr/bin/python3 — the first that imports ipykernel). The test runner chooses it once and
 * hands it over in NBAGENT_TEST_PYTHON; a test file run on its own chooses it here.
 */
import { findInterpreter } from "../src/kernel/interpreter.js";

export const TEST_PYTHON: string =
  process.env.NBAGENT_TEST_PYTHON || process.env.NBAGENT_PYTHON || (await findInterpreter()).path;
