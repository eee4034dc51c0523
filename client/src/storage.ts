/**
 * Where the client keeps its session. `window.localStorage` fits as it is; an async store
 * (React Native's AsyncStorage, a file, a cookie jar) fits too, since results may be promises.
 */
export interface SessionStorage {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

/** The default storage: a map that lives as long as the client (nothing survives a reload). */
export function memoryStorage(): SessionStorage {
  const map = new Map<string, string>();
  return {
    getItem: (key) => map.get(key) ?? null,
    setItem: (key, value) => void map.set(key, value),
    removeItem: (key) => void map.delete(key),
  };
}
