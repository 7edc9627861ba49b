// bob, with a token provider as @nolag/js-sdk 1.14 takes one: a function
// the SDK calls on every connect and before its token expires, here minting
// an unsigned JWT-shaped token (header.payload.sig, base64url) whose exp is
// TOKEN_SECONDS from now. ACTORS lists the sub of the successive tokens,
// comma-separated; the last one repeats. It subscribes to
// demo/general/messages in the connect handler and prints, one line each:
// the tokens minted, the connection events, what arrives, the reauth
// answers the SDK receives and what the SDK's debug log says about its
// token refresh.
import { NoLag } from "@nolag/js-sdk";

const url = process.env.KRAKEN_URL;
const actors = process.env.ACTORS.split(",");
const seconds = Number(process.env.TOKEN_SECONDS);

const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
let minted = 0;
function token() {
  const sub = actors[Math.min(minted, actors.length - 1)];
  minted++;
  const exp = Math.floor(Date.now() / 1000) + seconds;
  console.log(`token ${minted}: ${sub}`);
  return `${b64({ alg: "none", typ: "JWT" })}.${b64({ sub, exp, n: minted })}.x`;
}

// The SDK logs with console.log("[NoLag]", …) under debug:true. Keep its
// lines about the token refresh and the reauth answers it receives.
const print = console.log;
const refresh = [
  "Client token refreshed in-band",
  "Reauth rejected:",
  "Reauth send failed:",
  "In-band reauth unavailable",
  "Reconnecting with refreshed client token",
  "Token refresh reconnect failed:",
  "Token provider failed",
];
console.log = (...args) => {
  if (args[0] !== "[NoLag]") {
    print(...args);
    return;
  }
  const [what, msg] = args.slice(1);
  if (what === "Received:" && msg?.type === "reauth") {
    print("sdk received:", JSON.stringify(msg));
  } else if (typeof what === "string" && refresh.some((p) => what.startsWith(p))) {
    print("sdk:", args.slice(1).map(String).join(" "));
  }
};

const bob = NoLag(token, { url, debug: true });

bob.on("error", (err) => console.error("error:", err.message));
bob.on("disconnect", (reason) => print("disconnect:", reason));
bob.on("reconnect", () => print("reconnect"));
bob.on("demo/general/messages", (data) => print("bob got:", data));
bob.on("connect", () => {
  print("connect");
  bob.subscribe("demo/general/messages", (err) => {
    print(err ? `subscribe failed: ${err.message}` : "subscribed");
  });
});

await bob.connect();
