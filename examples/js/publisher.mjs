// alice publishes one message to demo/general/messages and disconnects.
// Run: node publisher.mjs   (@nolag/js-sdk 1.3.0 on Node 20: node --experimental-websocket publisher.mjs)
import { NoLag } from "@nolag/js-sdk";

const url = process.env.KRAKEN_URL ?? "ws://localhost:8080/ws";
const alice = NoLag("dev-token-alice", { url });
await alice.connect();

alice.emit("demo/general/messages", { text: "hello from alice" }, (err) => {
  console.log(err ? `publish failed: ${err.message}` : "alice published");
  alice.disconnect();
});
