// Watch cutover's lock changes from Node.js: subscribe to the ROUTING
// bucket's subjects and decode each routing document (msgpack) by
// docs/wire-format.md alone. One JSON line per change on stdout.
//
//   NATS_URL=nats://127.0.0.1:4222 node watch.mjs [kind]
import { connect } from "@nats-io/transport-node";
import { decode } from "@msgpack/msgpack";

// docs/wire-format.md, "Lock types".
const LOCK_TYPES = ["none", "pre", "hard-delete", "write", "secondary"];

// The key is "<kind>.<escaped id>": bytes outside [A-Za-z0-9_-] are "=XX".
function resourceOf(key) {
  const dot = key.indexOf(".");
  const id = key.slice(dot + 1).replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  return key.slice(0, dot) + "/" + id;
}

// A token is never printed whole (docs/wire-format.md, "Tokens").
const redact = (t) => (t ? t.slice(0, 6) + "…" : undefined);

function location(loc) {
  if (!loc) return undefined;
  const l = loc.l ?? {};
  return {
    region: loc.r,
    lock: LOCK_TYPES[l.t ?? 0] ?? `unknown(${l.t})`,
    token: redact(l.k),
    not_before: l.nb?.toISOString(),
    expiry: l.ex?.toISOString(),
  };
}

const kind = process.argv[2];
const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" });
const sub = nc.subscribe(kind ? `$KV.ROUTING.${kind}.*` : "$KV.ROUTING.>");
await nc.flush();
console.error("subscribed");
for await (const m of sub) {
  const key = m.subject.slice("$KV.ROUTING.".length);
  const op = m.headers?.get("KV-Operation");
  if (op === "DEL" || op === "PURGE" || m.data.length === 0) {
    console.log(JSON.stringify({ resource: resourceOf(key), deleted: true }));
    continue;
  }
  const d = decode(m.data); // timestamps (extension -1) become Dates
  if (d.v !== 1) {
    console.error(`routing document schema ${d.v}: not understood, skipped`);
    continue;
  }
  console.log(JSON.stringify({
    resource: d.res,
    key,
    primary: location(d.p),
    secondary: location(d.s),
    migration_id: d.mid,
    target: d.tgt,
    // After a swap the migration is over (migration_id is gone): the
    // document names the migration that moved it last.
    last_migration_id: d.lmid,
    last_swap: d.ls ? { migration_id: d.ls.m, token: redact(d.ls.k) } : undefined,
    updated_at: d.at?.toISOString(),
  }));
}
