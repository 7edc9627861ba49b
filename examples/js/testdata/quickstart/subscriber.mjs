import { NoLag } from "@nolag/js-sdk";

const bob = NoLag("dev-token-bob", { url: "ws://localhost:8080/ws" });

bob.on("error", (err) => console.error("error:", err.message));
bob.on("demo/general/messages", (data) => console.log("bob got:", data));

// Subscribe in the connect handler. It runs after every successful connect,
// including automatic reconnects, so the subscription is made again if the
// broker restarts.
bob.on("connect", () => {
  bob.subscribe("demo/general/messages", (err) => {
    console.log(err ? `subscribe failed: ${err.message}` : "bob is subscribed");
  });
});

await bob.connect();
