import { bundleConsole } from "./bundle.ts" with { type: "macro" };

/** The console's bundled script and stylesheet, inlined at build time (see bundle.ts). */
export const CONSOLE_BUNDLE = bundleConsole();
