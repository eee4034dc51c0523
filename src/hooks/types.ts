import type { Principal } from "../principal.ts";
import type { ChangeEvent } from "../events/bus.ts";

/** What `onCommit` receives: the change event of CONTRACT §10 (a hard delete is a `delete` of `{ _id }`, `hard: true`). */
export type CommitEvent = Omit<ChangeEvent, "action"> & { action: "create" | "update" | "delete" | "restore"; hard?: true };

/** The in-transaction handlers a hook file may export (CONTRACT §5). */
export const HOOK_NAMES = [
  "beforeCreate",
  "afterCreate",
  "beforeUpdate",
  "afterUpdate",
  "beforeDelete",
  "afterDelete",
  "beforeRestore",
  "afterRestore",
] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/** What a hook handler receives (CONTRACT §5). `data` is mutable in before* handlers. */
export interface HookEvent {
  collection: string;
  op: "create" | "update" | "delete" | "restore";
  data: Record<string, unknown> | null;
  record: Record<string, unknown> | null;
  previous: Record<string, unknown> | null;
  auth: { kind: Principal["kind"]; id: string | null; roles: string[] };
}

export interface HookModule {
  collection: string;
  file?: string;
  beforeCreate?: (e: HookEvent) => void;
  afterCreate?: (e: HookEvent) => void;
  beforeUpdate?: (e: HookEvent) => void;
  afterUpdate?: (e: HookEvent) => void;
  beforeDelete?: (e: HookEvent) => void;
  afterDelete?: (e: HookEvent) => void;
  beforeRestore?: (e: HookEvent) => void;
  afterRestore?: (e: HookEvent) => void;
  /** Runs after the transaction commits, once per changed record; may be async; errors are logged. */
  onCommit?: (e: CommitEvent) => unknown;
}

export interface HookSet {
  list: HookModule[];
}
