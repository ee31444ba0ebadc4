"""Drive one MBAG mission with the real MalmoPython AgentHost (recipe A of
shared/malmo/TESTING.md) and print what it saw as JSON.

Run by tests/integration/malmopython_peer.rs with the interpreter of
.deps/malmopython (CPython 3.10 + mbag-malmo 0.38.0.0), against `mbag malmo
emulator` running in another process: MalmoPython does not release the GIL while it
blocks, so a peer in the same process would deadlock.

Usage: malmopython_mission.py HOST PORTS EXPERIMENT_ID ROLE0.xml [ROLE1.xml ...]

PORTS is client 0's control port, the others following it (10000 means 10000,
10001, ...), or every client's control port, comma-separated (an emulator on free
ports).
"""

import json
import sys
import time

import malmo  # noqa: F401  (sets MALMO_XSD_PATH)
import MalmoPython


def start(agent_host, xml, pool, role, experiment_id, deadline):
    """startMission with MBAG's retry policy (malmo_client._safe_start_mission)."""
    codes = MalmoPython.MissionErrorCode
    attempts = []
    while True:
        try:
            agent_host.startMission(
                MalmoPython.MissionSpec(xml, True),
                pool,
                MalmoPython.MissionRecordSpec(),
                role,
                experiment_id,
            )
            return attempts
        except MalmoPython.MissionException as error:
            code = error.details.errorCode
            attempts.append(str(code))
            retry = code in (
                codes.MISSION_SERVER_WARMING_UP,
                codes.MISSION_SERVER_NOT_FOUND,
                codes.MISSION_INSUFFICIENT_CLIENTS_AVAILABLE,
            )
            if not retry or time.time() > deadline:
                raise
            time.sleep(0.5)


def main():
    host, ports, experiment_id = sys.argv[1], sys.argv[2], sys.argv[3]
    xmls = [open(path).read() for path in sys.argv[4:]]
    ports = [int(p) for p in ports.split(",")]
    if len(ports) == 1:
        ports = [ports[0] + i for i in range(len(xmls))]
    pool = MalmoPython.ClientPool()
    for port in ports:
        pool.add(MalmoPython.ClientInfo(host, port))
    hosts = []
    report = {"roles": []}
    deadline = time.time() + 60
    for role, xml in enumerate(xmls):
        agent_host = MalmoPython.AgentHost()
        agent_host.setObservationsPolicy(MalmoPython.ObservationsPolicy.KEEP_ALL_OBSERVATIONS)
        retries = start(agent_host, xml, pool, role, experiment_id, deadline)
        hosts.append(agent_host)
        report["roles"].append({"start_retries": retries})

    states = [h.peekWorldState() for h in hosts]
    while not all(s.has_mission_begun for s in states):
        if time.time() > deadline:
            raise SystemExit("timed out waiting for every role's mission to begin")
        if any(s.errors for s in states):
            raise SystemExit("errors while starting: %s" % [[e.text for e in s.errors] for s in states])
        time.sleep(0.1)
        states = [h.peekWorldState() for h in hosts]

    # What MBAG sends right after the start (MalmoInterface._setup_malmo_mission),
    # then a move and a look, as the reference's commands are written.
    for role, agent_host in enumerate(hosts):
        for command in [
            "jump 1",
            "jump 0",
            "tp %s 2 0.5" % (role + 0.5),
            "setYaw 90",
            "setPitch 30",
            "chat hello from role %d" % role,
        ]:
            agent_host.sendCommand(command)
            time.sleep(0.01)
    time.sleep(1.0)

    for role, agent_host in enumerate(hosts):
        state = agent_host.getWorldState()
        observations = [json.loads(o.text) for o in state.observations]
        echoed = [c for o in observations for c in o.get("CommandsSinceLastObservation", [])]
        last = observations[-1] if observations else {}
        report["roles"][role].update(
            {
                "observations": len(observations),
                "keys": sorted(last.keys()),
                "echoed_commands": echoed,
                "last_position": [last.get("XPos"), last.get("YPos"), last.get("ZPos")],
                "last_yaw": last.get("Yaw"),
                "chat": [c for o in observations for c in o.get("Chat", [])],
                "errors": [e.text for e in state.errors],
            }
        )

    for agent_host in hosts:
        agent_host.sendCommand("quit")
    deadline = time.time() + 20
    states = [h.peekWorldState() for h in hosts]
    while any(s.is_mission_running for s in states):
        if time.time() > deadline:
            raise SystemExit("timed out waiting for MissionEnded")
        time.sleep(0.1)
        states = [h.peekWorldState() for h in hosts]
    for role, agent_host in enumerate(hosts):
        state = agent_host.getWorldState()
        report["roles"][role]["mission_control"] = [m.text for m in state.mission_control_messages]
        report["roles"][role]["end_errors"] = [e.text for e in state.errors]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
