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
