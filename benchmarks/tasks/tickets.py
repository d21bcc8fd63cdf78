"""A stateful ticket system of 13 tools with small results, and a six-turn conversation over it.

Shaped like the ticketing backends of multi-turn tool-use benchmarks: a user logs in, most
tools work on that user's tickets, results are small dicts, mistakes come back as
`{"error": ...}`, and every description opens with the same boilerplate; most also end with
the same note (the login tools do not).
"""

from __future__ import annotations

import ast
from typing import Any

from tooliscode import Tool
from tooliscode.openai.testing import ScriptedReply

from .conversation import Conversation, Seen, Turn, answer, parallel

OPENING = ("This tool belongs to the Lighthouse ticket system, which lets employees create, view "
           "and manage support tickets, e.g. for IT or facilities problems. Tool description: ")
CLOSING = " Requires a logged-in user (see login)."

USERS = {"mia": "hunter2", "omar": "correct-horse"}
AGENTS = {"noah": "it", "liam": "it", "ava": "facilities", "zoe": "it"}


def _tickets() -> dict[int, dict[str, Any]]:
    rows = [(101, "mia", "Laptop fan is loud", 2, "open", "liam"),
            (102, "mia", "Printer on floor 3 jams", 1, "open", None),
            (103, "mia", "Cannot access the shared drive", 4, "open", "noah"),
            (104, "mia", "Request a second monitor", 1, "closed", "liam"),
            (105, "mia", "Email signature is broken", 3, "open", None),
            (106, "mia", "Old VPN profile still installed", 1, "open", None),
            (107, "omar", "Desk lamp flickers", 2, "open", "ava"),
            (108, "omar", "Slow wifi in room B", 3, "open", "liam"),
            (109, "omar", "Badge does not open door 4", 4, "open", "liam")]
    return {i: {"id": i, "title": title, "description": "", "priority": priority,
                "status": status, "created_by": who, "assignee": agent, "comments": []}
            for i, who, title, priority, status, agent in rows}


class TicketSystem:
    """The backend: tickets, agents, and who is logged in."""

    def __init__(self) -> None:
        self.tickets = _tickets()
        self.user: str | None = None

    def _mine(self, ticket_id: int) -> dict[str, Any] | str:
        if self.user is None:
            return "not logged in: call login first"
        ticket = self.tickets.get(ticket_id)
        if ticket is None or ticket["created_by"] != self.user:
            return f"ticket {ticket_id} not found among {self.user}'s tickets"
        return ticket

    def _brief(self, ticket: dict[str, Any]) -> dict[str, Any]:
        return {k: ticket[k] for k in ("id", "title", "status", "priority")}

    # -- the tools ------------------------------------------------------------------------

    def login(self, username: str, password: str) -> dict[str, Any]:
        if USERS.get(username) != password:
            return {"login_status": False, "error": "wrong username or password"}
        self.user = username
        return {"login_status": True}

    def logout(self) -> dict[str, Any]:
        self.user = None
        return {"logout_status": True}

    def get_login_status(self) -> dict[str, Any]:
        return {"username": self.user}

    def create_ticket(self, title: str, description: str = "", priority: int = 1
                      ) -> dict[str, Any]:
        if self.user is None:
            return {"error": "not logged in: call login first"}
        if not 1 <= priority <= 5:
            return {"error": "priority must be from 1 to 5"}
        ticket_id = max(self.tickets) + 1
        self.tickets[ticket_id] = {"id": ticket_id, "title": title, "description": description,
                                   "priority": priority, "status": "open",
                                   "created_by": self.user, "assignee": None, "comments": []}
        return self._brief(self.tickets[ticket_id])

    def get_ticket(self, ticket_id: int) -> dict[str, Any]:
        ticket = self._mine(ticket_id)
        return {"error": ticket} if isinstance(ticket, str) else dict(ticket)

    def list_tickets(self, status: str | None = None) -> dict[str, Any]:
        if self.user is None:
            return {"error": "not logged in: call login first"}
        return {"tickets": [self._brief(t) for t in self.tickets.values()
                            if t["created_by"] == self.user and status in (None, t["status"])]}

    def search_tickets(self, text: str) -> dict[str, Any]:
        if self.user is None:
            return {"error": "not logged in: call login first"}
        return {"tickets": [self._brief(t) for t in self.tickets.values()
                            if t["created_by"] == self.user and text.lower() in t["title"].lower()]}

    def _change(self, ticket_id: int, what: str, **fields: Any) -> dict[str, Any]:
        ticket = self._mine(ticket_id)
        if isinstance(ticket, str):
            return {"error": ticket}
        ticket.update(fields)
        return {"status": f"ticket {ticket_id} {what}"}

    def edit_ticket(self, ticket_id: int, updates: dict[str, Any]) -> dict[str, Any]:
        unknown = set(updates) - {"title", "description", "priority"}
        if unknown:
            return {"error": f"cannot edit {', '.join(sorted(unknown))}"}
        return self._change(ticket_id, "updated", **updates)

    def close_ticket(self, ticket_id: int) -> dict[str, Any]:
        return self._change(ticket_id, "closed", status="closed")

    def resolve_ticket(self, ticket_id: int, resolution: str) -> dict[str, Any]:
        return self._change(ticket_id, "resolved", status="resolved", resolution=resolution)

    def add_comment(self, ticket_id: int, comment: str) -> dict[str, Any]:
        ticket = self._mine(ticket_id)
        if isinstance(ticket, str):
            return {"error": ticket}
        ticket["comments"].append({"by": self.user, "text": comment})
        return {"status": f"comment added to ticket {ticket_id}"}

    def assign_ticket(self, ticket_id: int, agent: str) -> dict[str, Any]:
        if agent not in AGENTS:
            return {"error": f"no agent named {agent!r}"}
        return self._change(ticket_id, f"assigned to {agent}", assignee=agent)

    def list_agents(self, team: str | None = None) -> dict[str, Any]:
        return {"agents": [{"username": a, "team": t, "open_tickets": sum(
            x["assignee"] == a and x["status"] == "open" for x in self.tickets.values())}
            for a, t in AGENTS.items() if team in (None, t)]}


def _p(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


_ID = _p("integer", "The id of the ticket.")
SPECS: dict[str, tuple[str, dict[str, Any], list[str], bool]] = {
    "login": ("Log a user in to the ticket system.", {
        "username": _p("string", "The user's name."),
        "password": _p("string", "The user's password.")}, ["username", "password"], False),
    "logout": ("Log the current user out.", {}, [], False),
    "get_login_status": ("Return the name of the logged-in user, or null.", {}, [], False),
    "create_ticket": ("Create a ticket for the logged-in user; returns its id, title, status "
                      "and priority.", {
                          "title": _p("string", "A short title."),
                          "description": _p("string", "What the problem is. Defaults to ''."),
                          "priority": _p("integer", "From 1 (lowest) to 5 (highest). Defaults "
                                         "to 1.")}, ["title"], True),
    "get_ticket": ("Get one of the user's tickets with all its fields: title, description, "
                   "priority, status, assignee and comments.", {"ticket_id": _ID},
                   ["ticket_id"], True),
    "list_tickets": ("List the user's tickets (id, title, status, priority), optionally only "
                     "those with a given status.", {
                         "status": _p("string", "'open', 'resolved' or 'closed'. Defaults to "
                                      "None, which lists all.")}, [], True),
    "search_tickets": ("Find the user's tickets whose title contains a text, case ignored.", {
        "text": _p("string", "The text to look for.")}, ["text"], True),
    "edit_ticket": ("Change the title, description or priority of one of the user's "
                    "tickets.", {
                        "ticket_id": _ID,
                        "updates": _p("object", "The fields to change and their new values.",
                                      properties={"title": {"type": "string"},
                                                  "description": {"type": "string"},
                                                  "priority": {"type": "integer"}})},
                    ["ticket_id", "updates"], True),
    "close_ticket": ("Close one of the user's tickets.", {"ticket_id": _ID}, ["ticket_id"],
                     True),
    "resolve_ticket": ("Mark one of the user's tickets resolved, with a resolution note.", {
        "ticket_id": _ID,
        "resolution": _p("string", "How it was resolved.")}, ["ticket_id", "resolution"], True),
    "add_comment": ("Add a comment to one of the user's tickets.", {
        "ticket_id": _ID, "comment": _p("string", "The comment's text.")},
        ["ticket_id", "comment"], True),
    "assign_ticket": ("Assign one of the user's tickets to a support agent.", {
        "ticket_id": _ID, "agent": _p("string", "The agent's username.")},
        ["ticket_id", "agent"], True),
    "list_agents": ("List the support agents (username, team, number of open tickets assigned), "
                    "optionally of one team.", {
                        "team": _p("string", "'it' or 'facilities'. Defaults to None, which "
                                   "lists all.")}, [], False),
}


def tools(system: TicketSystem) -> list[Tool]:
    """The backend's tools, in the shape such servers declare them (a JSON Schema each)."""
    return [Tool(name=name, description=OPENING + text + (CLOSING if logged_in else ""),
                 function=getattr(system, name),
                 parameters={"type": "object", "properties": props, "required": required})
            for name, (text, props, required, logged_in) in SPECS.items()]


# -- the conversation ---------------------------------------------------------------------------

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
