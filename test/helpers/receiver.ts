import { createHmac, timingSafeEqual } from "node:crypto";

/** One POST a webhook receiver got. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
  eventId: string;
  attempt: number;
}

/** What the receiver answers a request with: a status, or a promise of one (to hold the request). */
export type Answer = (r: Received, n: number) => number | Promise<number>;

export interface Receiver {
  url: string;
  /** Every request, in arrival order. */
  got: Received[];
  /** Requests answered so far. */
  answered: number;
  /** Changes how the next requests are answered (default: 200). */
  answer: Answer;
  stop(): void;
}

/** A real local HTTP server that records what it receives: the webhook receiver of tests and benchmarks. */
export function startReceiver(answer: Answer = () => 200): Receiver {
  const self: Receiver = {
    url: "",
    got: [],
    answered: 0,
    answer,
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const headers = Object.fromEntries(req.headers.entries());
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {}
      const r: Received = { headers, body, json, eventId: headers["x-baas-event-id"] ?? "", attempt: Number(headers["x-baas-attempt"]) };
      self.got.push(r);
      const status = await self.answer(r, self.got.length);
      self.answered++;
      return new Response(status >= 200 && status < 300 ? "ok" : "nope", { status });
    },
  });
  self.url = `http://127.0.0.1:${server.port}/hook`;
  return self;
}

/** Checks `X-Baas-Signature` the way docs/API.md tells receivers to: HMAC-SHA256 of the raw body, compared in constant time. */
export function validSignature(r: Received, secret: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(r.body).digest("hex")}`);
  const given = Buffer.from(r.headers["x-baas-signature"] ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
