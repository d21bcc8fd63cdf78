"""A stateful ticket system of 13 tools with small results (tickets_chat.py talks to it).

Shaped like the ticketing backends of multi-turn tool-use benchmarks: a user logs in, most
tools work on that user's tickets, results are small dicts, mistakes come back as
`{"error": ...}`, and every description opens with the same boilerplate; most also end with
the same note (the login tools do not).
"""

from __future__ import annotations

from typing import Any

from tooliscode import Tool

from .conversation import prop

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


_ID = prop("integer", "The id of the ticket.")
SPECS: dict[str, tuple[str, dict[str, Any], list[str], bool]] = {
    "login": ("Log a user in to the ticket system.", {
        "username": prop("string", "The user's name."),
        "password": prop("string", "The user's password.")}, ["username", "password"], False),
    "logout": ("Log the current user out.", {}, [], False),
    "get_login_status": ("Return the name of the logged-in user, or null.", {}, [], False),
    "create_ticket": ("Create a ticket for the logged-in user; returns its id, title, status "
                      "and priority.", {
                          "title": prop("string", "A short title."),
                          "description": prop("string", "What the problem is. Defaults to ''."),
                          "priority": prop("integer", "From 1 (lowest) to 5 (highest). Defaults "
                                         "to 1.")}, ["title"], True),
    "get_ticket": ("Get one of the user's tickets with all its fields: title, description, "
                   "priority, status, assignee and comments.", {"ticket_id": _ID},
                   ["ticket_id"], True),
    "list_tickets": ("List the user's tickets (id, title, status, priority), optionally only "
                     "those with a given status.", {
                         "status": prop("string", "'open', 'resolved' or 'closed'. Defaults to "
                                      "None, which lists all.")}, [], True),
    "search_tickets": ("Find the user's tickets whose title contains a text, case ignored.", {
        "text": prop("string", "The text to look for.")}, ["text"], True),
    "edit_ticket": ("Change the title, description or priority of one of the user's "
                    "tickets.", {
                        "ticket_id": _ID,
                        "updates": prop("object", "The fields to change and their new values.",
                                      properties={"title": {"type": "string"},
                                                  "description": {"type": "string"},
                                                  "priority": {"type": "integer"}})},
                    ["ticket_id", "updates"], True),
    "close_ticket": ("Close one of the user's tickets.", {"ticket_id": _ID}, ["ticket_id"],
                     True),
    "resolve_ticket": ("Mark one of the user's tickets resolved, with a resolution note.", {
        "ticket_id": _ID,
        "resolution": prop("string", "How it was resolved.")}, ["ticket_id", "resolution"], True),
    "add_comment": ("Add a comment to one of the user's tickets.", {
        "ticket_id": _ID, "comment": prop("string", "The comment's text.")},
        ["ticket_id", "comment"], True),
    "assign_ticket": ("Assign one of the user's tickets to a support agent.", {
        "ticket_id": _ID, "agent": prop("string", "The agent's username.")},
        ["ticket_id", "agent"], True),
    "list_agents": ("List the support agents (username, team, number of open tickets assigned), "
                    "optionally of one team.", {
                        "team": prop("string", "'it' or 'facilities'. Defaults to None, which "
                                   "lists all.")}, [], False),
}


def tools(system: TicketSystem) -> list[Tool]:
    """The backend's tools, in the shape such servers declare them (a JSON Schema each)."""
    return [Tool(name=name, description=OPENING + text + (CLOSING if logged_in else ""),
                 function=getattr(system, name),
                 parameters={"type": "object", "properties": props, "required": required})
            for name, (text, props, required, logged_in) in SPECS.items()]
