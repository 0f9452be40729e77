/**
 * `nbagent doctor`'s kernel lines: every kernelspec the local backend finds for the chosen
 * interpreter, each started for real (kernel_info answered, then shut down), with its language and
 * where its spec lives (docs/kernels.md). Not required: a broken R kernel does not stop Python.
 */
import { createLocalBackend } from "../kernel/index.js";
import { localBackendOptions, type Settings } from "../runtime/settings.js";
import { describeFailure } from "../tools/failure-text.js";
import type { DoctorCheck } from "./doctor-check.js";

/** Bound on each start: a first R or Octave start on a cold machine takes a few seconds. */
const START_TIMEOUT_MS = 60_000;

export async function kernelChecks(python: string, settings: Settings): Promise<DoctorCheck[]> {
  const backend = createLocalBackend({ ...localBackendOptions(settings), forkServer: false });
  try {
    const names = await backend.kernelSpecNames({ python });
    return await Promise.all(names.map((name) => tryKernel(backend, name, python)));
  } finally {
    await backend.dispose();
  }
}

async function tryKernel(
  backend: ReturnType<typeof createLocalBackend>,
  name: string,
  python: string,
): Promise<DoctorCheck> {
  const check = { name: `kernel ${name}`, required: false };
  const started = performance.now();
  try {
    const kernel = await backend.startKernel({ kernelName: name, python, startTimeoutMs: START_TIMEOUT_MS });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const { languageName, languageVersion, implementation } = kernel.info;
    await kernel.shutdown();
    const language = [languageName || "unknown language", languageVersion].filter(Boolean).join(" ");
    const where = await backend.kernelSpecInfo?.(name, { python }).catch(() => undefined);
    return {
      ...check,
      ok: true,
      detail: `${where?.displayName ?? name}: ${language} (${implementation || "unnamed kernel"}), started in ${seconds} s`,
    };
  } catch (err) {
    return { ...check, ok: false, detail: `does not start: ${describeFailure(err)}` };
  }
}
