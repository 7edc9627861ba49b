import { NoLag } from "@nolag/js-sdk";

const alice = NoLag("dev-token-alice", { url: "ws://localhost:8080/ws" });
await alice.connect();

alice.emit("demo/general/messages", { text: "hello from alice" }, (err) => {
  console.log(err ? `publish failed: ${err.message}` : "alice published");
  alice.disconnect();
});
