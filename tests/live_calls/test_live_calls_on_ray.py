"""Live calls recognised on Ray (CALLSCOPE_LIVE_EXECUTOR=ray), through the real server and its local Ray: each
call is its own actor process, taken from the spare started ahead; a call whose actor dies mid-call (its process
killed, as when its node is lost) says so in an event and goes on, its audio stored; a call that finds no room on
the cluster says so too."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from tests.analysis import speech
from tests.live import start_server
from tests.live_calls.sound import TwoParty, two_party
from tests.live_calls.test_live_calls_served import SCRIPT, Client, World, objects
from tests.test_ray_local import descendants

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("ray"),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]

START_TIMEOUT_S = 90  # an actor's placement and model load (a loaded machine); a call without room waits this long


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("live-ray")
    # 1.5 of the local Ray's 2 CPUs per call: room for one call at a time
    server = start_server(root / "data", log_level="INFO", whisper_model="tiny.en", llm_enabled="false",
                          analysis_executor="inline", live_executor="ray", ray_num_cpus="2",
                          ray_object_store_mb="128", ray_live_num_cpus="1.5",
                          live_start_timeout_seconds=str(START_TIMEOUT_S), dispatcher_slots="1",
                          dispatcher_poll_seconds="0.3", analysis_threads="1", live_idle_timeout_seconds="300")
    try:
        (root / "objects.yaml").write_text(objects())
        server.cli("apply", "-f", str(root / "objects.yaml"))
        yield World(server, root / f"server-{server.url.rsplit(':', 1)[1]}.log", two_party(SCRIPT))
    finally:
        server.stop()


class Talking:
    """A call's audio sent over and over, in real time, from a thread, until the test has seen what it waits for
    (an actor that starts late, on a loaded machine, hears the backlog as finals only)."""

    def __init__(self, client: Client, call: TwoParty) -> None:
        self.client, self.call, self.done = client, call, threading.Event()
        self.thread = threading.Thread(target=self._talk, daemon=True)
        self.thread.start()

    def _talk(self) -> None:
        while not self.done.is_set():
            self.client.send_call(self.call, speed=1.0, until=self.done)

    def stop(self) -> None:
        self.done.set()
        self.thread.join(10)
        self.client.ws.send(json.dumps({"type": "stop"}))


def live_actors(world: World) -> list[int]:
    return [pid for pid, command in descendants(world.server.process.pid).items() if "LiveActor" in command]


def test_a_live_call_is_recognised_by_its_own_ray_actor(world: World) -> None:
    client = world.socket()
    public_id = client.start(world.project_id, name="On Ray")
    talking = Talking(client, world.call)
    client.wait_for("partial", "final", timeout=START_TIMEOUT_S + 60)
    talking.done.set()
    talking.thread.join(10)
    [actor] = live_actors(world)  # the call's recognition runs in its actor's process (its spare has no room yet)
    client.send_call(world.call)
    client.ws.send(json.dumps({"type": "stop"}))
    assert client.finish()[0] == 1000
    events = [m for m in client.messages if m["type"] != "started"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["public_id"] for e in events} == {public_id}
    said = " ".join(e["text"] for e in events if e["type"] == "final").lower()
    assert "thank you for calling" in said and "subscription" in said, said
    [goal] = [e for e in events if e["type"] == "goal"]
    assert (goal["goal_id"], goal["role"]) == (1, "agent")
    assert {e["name"] for e in events if e["type"] == "alert" and e["kind"] == "phrase"} == {"Cancellation"}
    assert events[-1]["stored"] is True and events[-1]["error"] is None
    deadline = time.monotonic() + 30
    while actor in live_actors(world) and time.monotonic() < deadline:  # the call's actor ends with the call
        time.sleep(0.5)
    assert actor not in live_actors(world)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not live_actors(world) and time.monotonic() < deadline:  # and the spare, with its room, takes its place
        time.sleep(0.5)
    assert len(live_actors(world)) == 1


def test_a_call_whose_actor_dies_says_so_and_keeps_its_audio(world: World) -> None:
    before = len(world.log.read_text())
    client = world.socket()
    public_id = client.start(world.project_id, name="Actor lost")
    talking = Talking(client, world.call)
    client.wait_for("partial", "final", timeout=START_TIMEOUT_S + 60)
    [actor] = live_actors(world)
    os.kill(actor, signal.SIGKILL)  # what a lost node does to the call's actor
    stopped = client.wait_for("recognition_stopped", timeout=60)
    assert stopped["reason"] == "lost" and "analysed as usual" in stopped["message"]
    talking.stop()
    assert client.finish()[0] == 1000
    kinds = [m["type"] for m in client.messages]
    assert kinds.count("recognition_stopped") == 1
    assert not {"partial", "final"} & set(kinds[kinds.index("recognition_stopped"):])
    end = client.messages[-1]
    assert end["type"] == "end" and end["stored"] is True and end["error"] == stopped["message"]
    assert world.recording(public_id)["status"] in ("pending", "processing", "completed")  # analysed as usual
    written = world.logged(before)
    assert '"live_recognition_lost"' in written and "Traceback" not in written


def test_a_call_that_finds_no_room_on_the_cluster_goes_on_unrecognised(world: World) -> None:
    first, second = world.socket(), world.socket()
    first.start(world.project_id, name="Holds the room")
    talking = [Talking(first, world.call)]
    first.wait_for("partial", "final", timeout=START_TIMEOUT_S + 60)
    public_id = second.start(world.project_id, name="No room")
    began = time.monotonic()
    talking.append(Talking(second, world.call))  # the call goes on while its actor waits for room
    stopped = second.wait_for("recognition_stopped", timeout=START_TIMEOUT_S + 30)
    assert stopped["reason"] == "no_capacity" and f"within {START_TIMEOUT_S} s" in stopped["message"]
    assert time.monotonic() - began >= START_TIMEOUT_S - 5
    for client, talker in zip((first, second), talking, strict=True):
        talker.stop()
        assert client.finish()[0] == 1000
    assert second.messages[-1]["stored"] is True
    assert world.recording(public_id)["name"] == "No room"
