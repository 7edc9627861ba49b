"""The kraken quickstart with the NoLag Python SDK: bob subscribes to
demo/general/messages, alice publishes to it, bob prints what he got.

    pip install -r requirements.txt
    python quickstart.py                 # KRAKEN_URL=ws://host:8080/ws for another broker
"""

import asyncio
import os

from nolag import NoLag, NoLagOptions

URL = os.environ.get("KRAKEN_URL", "ws://localhost:8080/ws")
TOPIC = "demo/general/messages"


async def main():
    bob = NoLag("dev-token-bob", NoLagOptions(url=URL))
    bob.on(TOPIC, lambda data, meta: print("bob got:", data))
    await bob.connect()
    await bob.subscribe(TOPIC)

    alice = NoLag("dev-token-alice", NoLagOptions(url=URL))
    await alice.connect()
    await alice.emit(TOPIC, {"text": "hello from alice"})

    await asyncio.sleep(1)  # give the message time to arrive
    alice.disconnect()
    bob.disconnect()


asyncio.run(main())
