"""The kraken quickstart with the NoLag Python SDK: bob subscribes to
demo/general/messages, alice publishes to it, bob prints what he got.

    pip install -r requirements.txt
    python quickstart.py                 # KRAKEN_URL=ws://host:8080/ws for another broker
"""

import asyncio
import os
import sys

from nolag import NoLag, NoLagOptions

URL = os.environ.get("KRAKEN_URL", "ws://localhost:8080/ws")
TOPIC = "demo/general/messages"


async def finish_closing(timeout=2.0):
    """Wait for the WebSocket closes that disconnect() scheduled.

    disconnect() is not a coroutine: it starts the close as a task and
    returns. Left running, that task is cancelled by asyncio.run on the way
    out, and the websockets library then waits out its close timeout (10 s)
    before the program can exit.
    """
    pending = asyncio.all_tasks() - {asyncio.current_task()}
    if pending:
        await asyncio.wait(pending, timeout=timeout)


async def main():
    got = asyncio.Event()

    def on_message(data, meta):
        print("bob got:", data)
        got.set()

    bob = NoLag("dev-token-bob", NoLagOptions(url=URL))
    bob.on(TOPIC, on_message)
    await bob.connect()
    await bob.subscribe(TOPIC)

    alice = NoLag("dev-token-alice", NoLagOptions(url=URL))
    await alice.connect()
    await alice.emit(TOPIC, {"text": "hello from alice"})

    try:
        await asyncio.wait_for(got.wait(), timeout=5)
    except asyncio.TimeoutError:
        sys.exit("bob got nothing within 5 s")
    finally:
        alice.disconnect()
        bob.disconnect()
        await finish_closing()


asyncio.run(main())
