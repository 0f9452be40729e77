/** scripts/dist-users.mjs: for each test file, why it needs dist/ built (undefined: it does not). */
export function distUsers(files: string[], root?: string): Map<string, string | undefined>;
