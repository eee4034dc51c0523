/** Live updates for console views: the console is a realtime client like any other (EventSource + POST). */
import { api } from "./api.ts";

const CHANGE_EVENTS = ["create", "update", "delete", "restore", "reset"];

/**
 * Follows `topics` while the view is current: `onChange` runs (at most every 300 ms) after changes
 * arrive, and `onState` tells whether the stream is live. The stream closes once `stale()` is true.
 */
export function follow(topics: string[], stale: () => boolean, onChange: () => void, onState: (live: boolean) => void): void {
  const es = new EventSource("/api/v1/realtime");
  let timer: ReturnType<typeof setTimeout> | null = null;
  const watch = setInterval(() => {
    if (stale()) close();
  }, 1000);
  function close() {
    es.close();
    clearInterval(watch);
    if (timer) clearTimeout(timer);
  }
  // Each connect (the first, and every automatic reconnect) has a new client_id to subscribe.
  es.addEventListener("connect", (e) => {
    if (stale()) return close();
    const { client_id } = JSON.parse((e as MessageEvent).data);
    api("POST", "/realtime", { client_id, subscriptions: topics }).then(
      () => onState(true),
      () => onState(false),
    );
  });
  es.onerror = () => onState(false);
  for (const name of CHANGE_EVENTS)
    es.addEventListener(name, () => {
      if (stale()) return close();
      timer ??= setTimeout(() => {
        timer = null;
        if (!stale()) onChange();
      }, 300);
    });
}
