// The import rules of src/ and cli/, checked by test/unit/layers.test.ts (so by `npm test`); docs/ARCHITECTURE.md
// explains them. The folders of src/ (and its top-level files) are layers, lowest first: each may import only
// those before it, never one after it. A total order also means no import cycle between folders.

/** Lowest first. A folder is "name/"; a top-level file of src/ is "name.ts". */
const LAYERS = [
  // Plain utilities that import nothing of ours (or only each other, in this order).
  ["errors.ts", "crypto.ts", "ids.ts", "clock.ts", "ip.ts", "log.ts", "version.ts", "config.ts", "principal.ts"],
  ["db/"],
  ["tables/"],
  ["events/"],
  ["hooks/"],
  ["mail/"],
  ["catalog/"],
  ["context.ts"],
  ["transaction.ts"],
  ["idempotency/"],
  ["settings/"],
  ["users/"],
  ["auth/"],
  ["rules/"],
  ["search/"],
  ["query/"],
  ["files/"],
  ["collections/"],
  ["relations/"],
  ["records/"],
  ["webhooks/"],
  ["ops/"],
  ["realtime/"],
  ["console/"],
  ["http/"],
  ["app-context.ts"],
  ["server.ts"],
];

const esc = (s) => s.replace(/[.]/g, "\\.");
const pathOf = (entry) => (entry.endsWith("/") ? `^src/${esc(entry)}` : `^src/${esc(entry)}$`);
const anyOf = (entries) => `(${entries.map(pathOf).join("|")})`;

const layerRules = [];
for (let i = 0; i < LAYERS.length - 1; i++) {
  const above = LAYERS.slice(i + 1).flat();
  for (const entry of LAYERS[i]) {
    layerRules.push({
      name: `layer:${entry}`,
      comment: `${entry} is below ${above.join(", ")}: it may not import them (see docs/ARCHITECTURE.md)`,
      severity: "error",
      from: { path: pathOf(entry) },
      to: { path: anyOf(above) },
    });
  }
}

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: "src-not-cli",
      comment: "src/ is the library the CLI drives: it never imports cli/",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^cli/" },
    },
    {
      name: "layers-known",
      comment: "every folder and top-level file of src/ has a place in LAYERS (.dependency-cruiser.cjs)",
      severity: "error",
      from: { path: "^src/", pathNot: anyOf(LAYERS.flat()) },
      to: {},
    },
    {
      name: "no-circular-between-folders",
      comment: "an import cycle that leaves its folder",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { circular: true, viaSomeNot: "^src/$1/" },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/console/ui/" },
  },
};
