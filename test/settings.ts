/**
 * Settings for tests, resolved as the edges resolve them (src/runtime/settings.ts): from this test
 * process's environment unless a test gives its own, and flags when it gives them.
 */
import { type HostEnv, resolveSettings, type Settings, type SettingsFlags } from "../src/runtime/settings.js";

export function testSettings(env: HostEnv = process.env, flags: SettingsFlags = {}): Settings {
  return resolveSettings(flags, env);
}
