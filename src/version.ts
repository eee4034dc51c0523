import pkg from "../package.json" with { type: "json" };

/** The release version, from package.json (embedded by the compiler). */
export const VERSION: string = pkg.version;
