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
