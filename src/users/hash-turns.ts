import { AppError } from "../errors.ts";
import { formatIp, parseIp } from "../ip.ts";

/**
 * Password hashes take turns. One argon2id hash is 64 MiB and about a tenth of a second of a core, and
 * anyone can ask for one (a login with any email, a registration, a reset with any token): without turns,
 * a client sending logins as fast as it can keeps every core hashing and the rest of the server waits.
 *
 * - At most HASHES_AT_ONCE hashes run at once (one core fewer than the machine has, at least one), so a
 *   core is always left to answer everything else.
 * - Waiting hashes are taken address by address in turn: a flood from one address delays another
 *   address's login by about one hash per busy address, not by the whole flood. An IPv6 address counts by its
 *   /64 network (one host is given a /64 and may send from any address in it).
 * - An address may have WAITING_PER_ADDRESS hashes waiting and all addresses WAITING_IN_ALL; past either,
 *   429 `rate_limited` with Retry-After (nothing was hashed, nothing counted).
 *
 * The turns are the process's (the cores are), shared by every app in it.
 */
export const HASHES_AT_ONCE = Math.max(1, (navigator.hardwareConcurrency || 1) - 1);
export const WAITING_PER_ADDRESS = 64;
export const WAITING_IN_ALL = 2048;

/** A request waiting for its turn: its resolver. */
type Waiter = () => void;

let running = 0;
let waitingInAll = 0;
// Waiting hashes by address, in the order addresses take turns (a Map keeps insertion order: an address
// served goes to the back while it still has some waiting).
const waiting = new Map<string, Waiter[]>();

const busy = (message: string) => new AppError(429, "rate_limited", message, {}, { "Retry-After": "1" });

function takeTurn(address: string): Promise<void> | null {
  if (running < HASHES_AT_ONCE && waitingInAll === 0) {
    running++;
    return null;
  }
  const queue = waiting.get(address);
  if ((queue?.length ?? 0) >= WAITING_PER_ADDRESS) throw busy("too many password checks from this address at once; try again in a second");
  if (waitingInAll >= WAITING_IN_ALL) throw busy("too many password checks at once; try again in a second");
  waitingInAll++;
  return new Promise<void>((resolve) => {
    if (queue) queue.push(resolve);
    else waiting.set(address, [resolve]);
  });
}

// The turn passes to the next address's oldest waiter (the running count stays), or is given back.
function endTurn(): void {
  const next = waiting.entries().next();
  if (next.done) {
    running--;
    return;
  }
  const [address, queue] = next.value;
  waiting.delete(address);
  const wake = queue.shift()!;
  if (queue.length) waiting.set(address, queue);
  waitingInAll--;
  wake();
}

/** Whose turn a request takes: its IPv4 address, or its IPv6 address's /64 network. */
function turnOf(address: string): string {
  const bytes = address.includes(":") ? parseIp(address) : null;
  if (!bytes || bytes.length !== 16) return address;
  const net = new Uint8Array(16);
  net.set(bytes.subarray(0, 8));
  return `${formatIp(net)}/64`;
}

const gone = () => new AppError(400, "bad_request", "the client went away before its password check");

/**
 * Runs `hash` in `address`'s turn (see above); 429 `rate_limited` when too many wait. A request whose client went
 * away while it waited (`signal` aborted) is not hashed: its turn passes on.
 */
export async function inHashTurn<T>(address: string, hash: () => Promise<T>, signal?: AbortSignal | null): Promise<T> {
  if (signal?.aborted) throw gone();
  const wait = takeTurn(turnOf(address));
  if (wait) await wait;
  if (signal?.aborted) {
    endTurn();
    throw gone();
  }
  try {
    return await hash();
  } finally {
    endTurn();
  }
}
