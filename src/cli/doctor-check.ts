/** One line of `nbagent doctor`'s report (doctor.ts makes them; doctor-kernels.ts the kernel lines). */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
  /** Required for the embedded default to work; optional ones only warn. */
  required: boolean;
}
