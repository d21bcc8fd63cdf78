"""Six user turns over the ticket system of tickets.py: each answered both ways and checked
against the same steps taken directly on a backend of our own."""

from __future__ import annotations

import ast
from typing import Any

from tooliscode.openai.testing import ScriptedReply

from .conversation import Conversation, Seen, Turn, answer, parallel
from .tickets import TicketSystem, tools

PROMPTS = [
    "Log me in as mia, password hunter2, and list my open tickets.",
    "Which of them has the highest priority? Give me its id and title.",
    "Add the comment 'Looking into this today' to it and assign it to noah.",
    "Open a new ticket 'VPN drops every hour' with priority 4 and the description 'Since "
    "Monday the VPN disconnects every hour.' How many open tickets do I have now?",
    "Resolve all my open tickets of priority 1 with the note 'Stale, closing'.",
    "Which IT agent has the fewest open tickets? Give the VPN ticket to them.",
]


def _brief_list(tickets: list[dict[str, Any]]) -> list[list[Any]]:
    return [[t["id"], t["title"], t["priority"]] for t in tickets]


def _top(tickets: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(tickets, key=lambda t: t["priority"])
    return {"id": best["id"], "title": best["title"]}


def _open(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("login", {"username": "mia", "password": "hunter2"}),
                         ("list_tickets", {"status": "open"})])
    return answer(_brief_list(seen.last("list_tickets")["tickets"]))


def _highest(seen: Seen) -> ScriptedReply:  # read from the listing it already has
    return answer(_top(seen.before("list_tickets")[-1]["tickets"]))


def _comment(seen: Seen) -> ScriptedReply:
    top = _top(seen.before("list_tickets")[-1]["tickets"])["id"]
    if seen.step == 0:
        return parallel([("add_comment", {"ticket_id": top, "comment": "Looking into this today"}),
                         ("assign_ticket", {"ticket_id": top, "agent": "noah"}),
                         ("get_ticket", {"ticket_id": top})])
    ticket = seen.last("get_ticket")
    return answer({"id": top, "assignee": ticket["assignee"], "comments": len(ticket["comments"])})


def _new(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("create_ticket", {"title": "VPN drops every hour", "priority": 4,
                                            "description": "Since Monday the VPN disconnects "
                                                           "every hour."}),
                         ("list_tickets", {"status": "open"})])
    return answer({"id": seen.last("create_ticket")["id"],
                   "open": len(seen.last("list_tickets")["tickets"])})


def _resolve(seen: Seen) -> ScriptedReply:
    stale = [t["id"] for t in seen.before("list_tickets")[-1]["tickets"] if t["priority"] == 1]
    if seen.step == 0:  # the open tickets it listed a turn ago
        return parallel([("resolve_ticket", {"ticket_id": i, "resolution": "Stale, closing"})
                         for i in stale])
    return answer(stale)


def _agent(seen: Seen) -> ScriptedReply:
    if seen.step == 0:
        return parallel([("list_agents", {"team": "it"})])
    agents = seen.last("list_agents")["agents"]
    idle = min(agents, key=lambda a: a["open_tickets"])["username"]
    vpn = seen.before("create_ticket")[-1]["id"]
    if seen.step == 1:
        return parallel([("assign_ticket", {"ticket_id": vpn, "agent": idle})])
    return answer({"agent": idle, "ticket": vpn})


CELLS = [
    ['login(username="mia", password="hunter2")\n'
     'print([[t["id"], t["title"], t["priority"]] for t in '
     'list_tickets(status="open")["tickets"]])'],
    [],  # answered from what the last cell printed
    ['top = 103\nadd_comment(ticket_id=top, comment="Looking into this today")\n'
     'assign_ticket(ticket_id=top, agent="noah")\nt = get_ticket(ticket_id=top)\n'
     'final_answer({"id": top, "assignee": t["assignee"], "comments": len(t["comments"])})'],
    ['vpn = create_ticket(title="VPN drops every hour", priority=4,\n'
     '                    description="Since Monday the VPN disconnects every hour.")["id"]\n'
     'final_answer({"id": vpn, "open": len(list_tickets(status="open")["tickets"])})'],
    ['stale = [t["id"] for t in list_tickets(status="open")["tickets"] if t["priority"] == 1]\n'
     'for i in stale:\n    resolve_ticket(ticket_id=i, resolution="Stale, closing")\n'
     'final_answer(stale)'],
    ['agents = list_agents(team="it")["agents"]\n'
     'idle = min(agents, key=lambda a: a["open_tickets"])["username"]\n'
     'assign_ticket(ticket_id=vpn, agent=idle)\nfinal_answer({"agent": idle, "ticket": vpn})'],
]
"""The code model's cells. In the third it writes the id it read from the first turn's
output (103, the highest priority there), as a model reading its transcript does."""


def _expected() -> list[Any]:
    """Each turn's answer, computed directly on a backend of our own."""
    system = TicketSystem()
    system.login("mia", "hunter2")
    listed = system.list_tickets("open")["tickets"]
    top = _top(listed)
    system.add_comment(top["id"], "Looking into this today")
    system.assign_ticket(top["id"], "noah")
    after = system.get_ticket(top["id"])
    vpn = system.create_ticket("VPN drops every hour", "Since Monday the VPN disconnects every "
                               "hour.", 4)["id"]
    still = system.list_tickets("open")["tickets"]
    stale = [t["id"] for t in still if t["priority"] == 1]
    for i in stale:
        system.resolve_ticket(i, "Stale, closing")
    idle = min(system.list_agents("it")["agents"], key=lambda a: a["open_tickets"])["username"]
    return [_brief_list(listed), top,
            {"id": top["id"], "assignee": after["assignee"], "comments": len(after["comments"])},
            {"id": vpn, "open": len(still)}, stale, {"agent": idle, "ticket": vpn}]


def _top_of_printed(output: str) -> dict[str, Any]:
    listed = ast.literal_eval(output)
    best = max(listed, key=lambda t: t[2])
    return {"id": best[0], "title": best[1]}


def conversation() -> Conversation:
    plain = [_open, _highest, _comment, _new, _resolve, _agent]
    replies = [ast.literal_eval, _top_of_printed, None, None, None, None]
    turns = [Turn(*parts) for parts in zip(PROMPTS, plain, CELLS, _expected(), replies)]
    return Conversation("ticket system, 13 tools: 6 user turns", TicketSystem, tools, turns)
