/**
 * Settings that cannot be used, as a typed value: which setting (an option, a variable, or
 * "conflict" for two that cannot be honoured together) and what is wrong with it. `message` says it
 * without the Error: prefix; tools/ (errorResult, errorText) words it for the model and the CLI.
 */
export class SettingsError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = "SettingsError";
  }
}
