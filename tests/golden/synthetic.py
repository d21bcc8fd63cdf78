"""Large tool sets for catalog, search and benchmark runs: the corpus's real schemas under
made-up service names, grouped like the MCP servers and toolsets of a big agent."""

from __future__ import annotations

from golden.refresh import corpora, corpus_tools
from tooliscode import Tool

SERVICES = ["gitlab", "jira", "slack", "gmail", "calendar", "drive", "notion", "stripe",
            "hubspot", "salesforce", "zendesk", "asana", "linear", "figma", "dropbox", "shopify",
            "twilio", "sentry", "datadog", "pagerduty", "postgres", "snowflake", "s3", "bigquery",
            "confluence"]
VERBS = ["list", "get", "create", "update", "delete", "search", "archive", "export"]
NOUNS = ["issues", "users", "messages", "files", "events", "invoices", "tickets", "projects",
         "comments", "reports"]


def synthetic_tools(n: int, namespaced: bool = True) -> list[Tool]:
    """`n` tools spread evenly over the services; flat names (`slack_list_users`) when not
    `namespaced`."""
    shapes = [t for c in corpora() for t in corpus_tools(c)]
    per_service = -(-n // len(SERVICES))
    out = []
    for i in range(n):
        service, k = SERVICES[i // per_service], i % per_service
        verb, noun = VERBS[k % len(VERBS)], NOUNS[(k // len(VERBS)) % len(NOUNS)]
        suffix = "" if k < len(VERBS) * len(NOUNS) else f"_{k}"
        name = f"{verb}_{noun}{suffix}"
        shape = shapes[i % len(shapes)]
        description = (f"{verb.capitalize()} {noun} in {service.capitalize()}. "
                       f"{shape.description}")
        out.append(Tool(name=f"{service}.{name}" if namespaced else f"{service}_{name}",
                        description=description, parameters=shape.parameters,
                        output_schema=shape.output_schema,
                        namespace=service if namespaced else None,
                        python_name=name if namespaced else ""))
    return out


BOILERPLATE = ("This tool belongs to the Acme ERP system. It requires an authenticated session "
               "and respects the caller's permissions.")
ERP_ACTIONS = {
    "create_purchase_order": "Creates a purchase order for a supplier.",
    "approve_purchase_order": "Approves a pending purchase order.",
    "list_purchase_orders": "Lists purchase orders, newest first.",
    "get_supplier": "Returns one supplier with its contacts and terms.",
    "create_invoice": "Creates a customer invoice from a sales order.",
    "void_invoice": "Voids an invoice that has not been paid.",
    "record_payment": "Records a payment against an invoice.",
    "get_stock_level": "Returns the stock on hand for an item in a warehouse.",
    "transfer_stock": "Moves stock between two warehouses.",
    "list_employees": "Lists employees of a department.",
    "submit_expense": "Submits an expense claim for approval.",
    "close_period": "Closes an accounting period so no more entries can be posted to it.",
}


def boilerplate_tools(namespace: str | None = "erp") -> list[Tool]:
    """12 tools of one server whose descriptions all open with the same two sentences, as
    some servers write them; top-level tools when `namespace` is None."""
    return [Tool(name=name, namespace=namespace,
                 description=f"{BOILERPLATE} {action} See the ERP manual for field meanings.",
                 parameters={"type": "object", "required": ["id"],
                             "properties": {"id": {"type": "string"}}})
            for name, action in ERP_ACTIONS.items()]


def _tools(descriptions: dict[str, str], key: str, kind: str) -> list[Tool]:
    """Tools by name and description, each taking one optional argument `key`."""
    return [Tool(name=name, description=description,
                 parameters={"type": "object", "properties": {key: {"type": kind}}})
            for name, description in descriptions.items()]


FS_OPENING = ("This tool belongs to the Harbor file system. It is a simple file system that lets "
              "users work with files and folders, e.g. navigating directories, creating, reading "
              "and writing files, etc. Tool description:")
FS_ACTIONS = {
    "pwd": "Return the current working directory path.",
    "ls": "List the contents of the current directory. Hidden files are left out unless asked.",
    "cd": "Change the current working directory to the given folder, e.g. 'docs' or '..'.",
    "mkdir": "Create a new directory in the current directory.",
    "touch": "Create a new, empty file in the current directory.",
    "echo": "Write content to a file in the current directory, or return it when no file "
            "is given.",
    "cat": "Display the contents of a file in the current directory.",
    "find": "Find files and directories whose names contain a given string, etc. in a "
            "directory tree.",
    "wc": "Count the lines, words or characters of a file.",
    "sort": "Sort the lines of a file alphabetically.",
    "grep": "Search for lines in a file that contain a pattern.",
    "du": "Estimate the disk usage of a directory and its contents.",
    "tail": "Display the last lines of a file.",
    "diff": "Compare two files line by line.",
    "mv": "Move a file or directory to another place, or rename it.",
    "rm": "Remove a file or directory.",
    "rmdir": "Remove an empty directory.",
    "cp": "Copy a file or directory to another place.",
}
"""Own texts; the first sentences of `ls` and `rm` begin like other tools' (`List`, `Remove`)."""
FS_SHORT_OPENING = "This tool belongs to the Harbor file system. Tool description:"
FS_SHORT = {"cp", "rmdir"}
"""Tools of the set whose descriptions carry only part of the opening, as happens when a
server's tools were written at different times."""


def file_system_tools() -> list[Tool]:
    """18 tools of one file-system server whose descriptions all open with the same two
    sentences (the second with "e.g." and "etc." in it) and a label; two of them with only
    the first sentence and the label."""
    return _tools({name: f"{FS_SHORT_OPENING if name in FS_SHORT else FS_OPENING} {action}"
                   for name, action in FS_ACTIONS.items()}, "path", "string")


TICKET_CLOSING = "Requires a logged-in session: call login first."
TICKET_ACTIONS = {
    "create_ticket": "Create a ticket with a title, a description and a priority from 1 to 5.",
    "get_ticket": "Get one ticket by its id.",
    "close_ticket": "Close a ticket.",
    "resolve_ticket": "Resolve a ticket with a resolution note.",
    "edit_ticket": "Change the fields of a ticket.",
    "list_tickets": "List the tickets the user created, newest first.",
    "add_comment": "Add a comment to a ticket.",
    "assign_ticket": "Assign a ticket to a support agent.",
}


def ticket_tools(label: str = "Ticket API:") -> list[Tool]:
    """8 tools whose descriptions open with a label and end with the same note."""
    return _tools({name: f"{label} {action} {TICKET_CLOSING}"
                   for name, action in TICKET_ACTIONS.items()}, "id", "integer")


ALLOWED_CLOSING = "Only works inside the notes folder."
CLOSING_ACTIONS = {
    "read_note": "Read a note file.",
    "write_note": "Write a note file, replacing it.",
    "list_notes": "List the note files of a folder.",
    "make_folder": "Make a folder and its parents.",
}


def closing_tools() -> list[Tool]:
    """4 tools that share only a closing note."""
    return [Tool(name=name, description=f"{action} {ALLOWED_CLOSING}")
            for name, action in CLOSING_ACTIONS.items()]
